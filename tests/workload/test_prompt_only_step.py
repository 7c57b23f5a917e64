"""A step that runs prompts with no decode beside it (an engine that does not mix them) costs the prefill alone."""

from types import SimpleNamespace

from sizeup.workload.serving import _step


class _FakeSteps:
    """Decode 10 ms at any batch, a prefill 25 ms: enough to see which parts a step adds."""

    def decode(self, batch, corner):
        return 0.010

    def prefill(self, tokens, corner):
        return 0.025


APART = SimpleNamespace(mixes=False)


def test_a_prompt_only_step_is_the_prefill_alone():
    # Before the fix a prompt-only step (batch 0) also paid a batch-1 decode: 35 ms, not 25.
    assert _step(_FakeSteps(), APART, 0, 512, "typical") == (0.025, 0.025)


def test_a_step_with_decodes_pays_both():
    assert _step(_FakeSteps(), APART, 4, 512, "typical") == (0.035, 0.025)
    assert _step(_FakeSteps(), APART, 4, 0, "typical") == (0.010, 0.0)
