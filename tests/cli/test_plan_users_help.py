"""`plan --users` says what a user means, and the number it states is the one the scenario assumes."""

import argparse
import re

from sizeup.cli.commands import plan
from sizeup.plan.scenario import parse_scenario


def test_users_help_states_the_rate_the_scenario_assumes():
    sub = argparse.ArgumentParser().add_subparsers()
    plan.register(sub)
    parser = sub.choices["plan"]
    action = next(a for a in parser._actions if "--users" in a.option_strings)
    rate = float(re.search(r"each sending (\d+(?:\.\d+)?) requests per hour", action.help).group(1))
    assert "--prompt" in action.help and "--output" in action.help  # the lengths it assumes
    scenario = parse_scenario({"name": "q", "model": "llama-3.1-8b", "task": "chat", "traffic": {"users": 36}},
                              source="command line")
    assert scenario.traffic.peak_requests_per_s == 36 * rate / 3600
