"""The one place a config.json's bytes are read: size cap, encodings, nesting, non-finite numbers."""

import codecs
import json

import pytest

from sizeup.errors import ConfigError
from sizeup.ingest.config_file import MAX_CONFIG_BYTES, MAX_DEPTH, parse_config_text, read_config_file
from sizeup.ingest.hf_config import load_model
from tests.ingest.model_files import preset_config

CONFIG = preset_config("llama-3.2-1b")


def test_utf8_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(codecs.BOM_UTF8 + json.dumps(CONFIG).encode())
    assert load_model(str(path)).params == load_model("llama-3.2-1b").params


@pytest.mark.parametrize("encoding, message", [
    ("utf-16", "UTF-16-encoded: expected UTF-8"),
    ("utf-16-le", "NUL bytes (UTF-16 or binary?): expected UTF-8"),
    ("utf-32", "UTF-32-encoded: expected UTF-8"),
    ("latin-1", "not UTF-8 (byte 0xe9 at offset"),
])
def test_other_encodings_are_refused_in_one_line(tmp_path, encoding, message):
    path = tmp_path / "config.json"
    path.write_bytes(json.dumps({**CONFIG, "note": "café"}, ensure_ascii=False).encode(encoding))
    with pytest.raises(ConfigError) as info:
        read_config_file(path)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["[" * 100_000, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
                                  '{"a":' * 5000 + "1" + "}" * 5000])
def test_nesting_is_limited(text):
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_config_text(text.encode(), "config.json")


def test_nesting_up_to_the_limit_is_read():
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_config_text(text.encode(), "config.json") is not None


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused(number):
    with pytest.raises(ConfigError, match="finite number"):
        parse_config_text(f'{{"hidden_size": {number}}}'.encode(), "config.json")


def test_an_integer_too_long_to_convert_is_refused():
    with pytest.raises(ConfigError, match="an integer of more than"):
        parse_config_text(b'{"hidden_size": 1' + b"0" * 5000 + b"}", "config.json")


def test_the_file_size_is_capped_before_parsing(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"a": "' + b"x" * MAX_CONFIG_BYTES + b'"}')
    with pytest.raises(ConfigError, match=f"limit {MAX_CONFIG_BYTES:,} bytes"):
        read_config_file(path)


@pytest.mark.parametrize("text, message", [("[1, 2]", "expected a JSON object, got a JSON array"),
                                           ('{"a": 1', "not valid JSON (line 1 column 8")])
def test_not_an_object_or_not_json(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        read_config_file(path)


def test_a_missing_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_model(str(tmp_path / "config.json"))
