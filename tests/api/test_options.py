"""Options given outside the CLI are checked against their dataclass: type, bounds, unknown names."""

import pytest

from sizeup.api import EstimateOptions, TrainOptions
from sizeup.api.options import build_options
from sizeup.errors import ConfigError


@pytest.mark.parametrize("changes, message", [
    ({"batch": "8"}, "batch='8': expected an integer"),
    ({"batch": True}, "batch=True: expected an integer"),
    ({"batch": 0}, "batch=0: expected at least 1"),
    ({"prompt": 1.5}, "prompt=1.5: expected an integer"),
    ({"context": "long"}, "context='long': expected an integer or None"),
    ({"image_size": (448,)}, "image_size=(448,): expected 2 values"),
    ({"sweep": "yes"}, "sweep='yes': expected true or false or a list of integers"),
])
def test_a_bad_value_is_one_line_naming_it(changes, message):
    with pytest.raises(ConfigError) as err:
        build_options(EstimateOptions, None, changes, "estimate")
    assert str(err.value).startswith(message)


def test_an_unknown_option_names_the_closest():
    with pytest.raises(ConfigError, match=r"train: unknown option 'rnak' \(did you mean rank\?\)"):
        build_options(TrainOptions, None, {"rnak": 8}, "train")


def test_choices_and_lists():
    o = build_options(TrainOptions, None, {"targets": ["q_proj", "k_proj"], "method": "qlora"}, "train")
    assert o.targets == ("q_proj", "k_proj") and o.method == "qlora"
    with pytest.raises(ConfigError, match="method='lora2': expected one of 'full'"):
        build_options(TrainOptions, None, {"method": "lora2"}, "train")
    with pytest.raises(ConfigError, match="options must be a TrainOptions"):
        build_options(TrainOptions, EstimateOptions(), {}, "train")


def test_options_object_and_keywords_combine():
    base = EstimateOptions(device="rtx-4090", quant="q4_k_m")
    o = build_options(EstimateOptions, base, {"batch": 4}, "estimate")
    assert (o.device, o.quant, o.batch) == ("rtx-4090", "q4_k_m", 4)
    assert o.changed() == {"device": "rtx-4090", "quant": "q4_k_m", "batch": 4}
