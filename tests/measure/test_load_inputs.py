"""`sizeup load` inputs checked before the first request (issue 27.6): the URL and the prompts file. Each bad
one is refused in one exact line, exit code 1, within seconds — a FIFO or /dev/zero never hangs the run."""

import json
import os
import socket
import time

import pytest

from sizeup.cli.main import main
from sizeup.errors import ConfigError
from sizeup.measure.load_inputs import MAX_PROMPTS_BYTES, check_url, read_prompts, redact_url


@pytest.mark.parametrize("url, message", [
    ("http://127.0.0.1:8000/v1/chat/completions\r\nX-Injected: 1",
     "URL 'http://127.0.0.1:8000/v1/chat/completions\\r\\nX-Injected: 1': contains '\\r' at position 41; a URL has "
     "no spaces or control characters (percent-encode them)"),
    ("http://127.0.0.1:99999/v1", "URL 'http://127.0.0.1:99999/v1': port 99999 is out of range; expected a port "
                                  "1-65535"),
    ("http://127.0.0.1:0/v1", "URL 'http://127.0.0.1:0/v1': port 0 is out of range; expected a port 1-65535"),
    ("http://127.0.0.1:http/v1", "URL 'http://127.0.0.1:http/v1': port 'http' is not a number; expected a port "
                                 "1-65535"),
    ("ftp://127.0.0.1/", "URL 'ftp://127.0.0.1/': expected http://HOST:PORT/… or https://…"),
    ("127.0.0.1:8000/v1", "URL '127.0.0.1:8000/v1': expected http://HOST:PORT/… or https://…"),
    ("http:///v1", "URL 'http:///v1': expected http://HOST:PORT/… or https://…"),
    ("http://:8000/v1", "URL 'http://:8000/v1': no host; expected http://HOST:PORT/…"),
    ("http://[::1/v1", "URL 'http://[::1/v1': not a URL (Invalid IPv6 URL)"),
    ("http://a..b:8000/v1", "URL 'http://a..b:8000/v1': host 'a..b' is not a host name (empty or over-long label)"),
    ("http://" + "x" * 64 + ".com/", "URL 'http://" + "x" * 64 + ".com/': host '" + "x" * 64 + ".com' is not a host "
                                     "name (empty or over-long label)"),
    ("http://host/a b", "URL 'http://host/a b': contains ' ' at position 13; a URL has no spaces or control "
                        "characters (percent-encode them)"),
    ("http://h/" + "a" * 3000, "URL 'http://h/" + "a" * 51 + "'… (3,009 characters): 3,009 characters; expected at "
                               "most 2,048"),
])
def test_bad_urls(url, message):
    with pytest.raises(ConfigError) as info:
        check_url(url)
    assert str(info.value) == message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1/chat/completions", "https://api.example.com/v1/x",
                                 "http://[::1]:8000/", "HTTP://LOCALHOST:65535/x?y=1"])
def test_good_urls(url):
    assert check_url(url) == url


def write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_text_and_jsonl_prompts(tmp_path):
    assert read_prompts(write(tmp_path, "p.txt", "\ufeffWhat is a GPU?\n\n  Explain KV caches.  \r\n".encode())) == \
        ("What is a GPU?", "Explain KV caches.")
    lines = [json.dumps({"prompt": "one", "id": 1}), "", json.dumps({"prompt": "two\nlines"})]
    assert read_prompts(write(tmp_path, "p.jsonl", "\n".join(lines).encode())) == ("one", "two\nlines")


def prompt_refusal(path) -> str:
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        read_prompts(path)
    assert time.perf_counter() - start < 5
    return str(info.value)


def test_binary_and_malformed_prompt_files(tmp_path):
    where = lambda p: f"--prompts {str(p)!r}"  # noqa: E731
    p = write(tmp_path, "bin.txt", b"hello\n\x7fELF\x02\x01\x01\x00\x00")
    assert prompt_refusal(p) == f"{where(p)}: binary data, not prompts (control character '\\x7f' on line 2)"
    p = write(tmp_path, "l1.txt", "café".encode("latin-1"))
    assert prompt_refusal(p) == f"{where(p)}: not UTF-8 text (byte 0xe9 at offset 3): binary data, or another encoding"
    p = write(tmp_path, "u16.txt", "hi\n".encode("utf-16"))
    assert prompt_refusal(p) == f"{where(p)}: UTF-16 text; save the prompts as UTF-8"
    p = write(tmp_path, "empty.txt", b"\n \n")
    assert prompt_refusal(p) == f"{where(p)}: the file has no prompts (one per line, or JSON Lines with \"prompt\")"
    p = write(tmp_path, "bad.jsonl", b'{"prompt": "ok"}\n{"text": "no prompt"}\n')
    assert prompt_refusal(p) == f"{where(p)}: line 2: expected an object with a non-empty string \"prompt\""
    p = write(tmp_path, "bad2.jsonl", b'{"prompt": "ok"}\nnot json\n')
    assert prompt_refusal(p).startswith(f"{where(p)}: line 2 is not JSON (")
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(MAX_PROMPTS_BYTES + 1)
    assert prompt_refusal(big) == f"--prompts file {str(big)!r} has {MAX_PROMPTS_BYTES + 1:,} bytes, larger than " \
                                  f"16,384 KiB (limit {MAX_PROMPTS_BYTES:,} bytes)"
    missing = tmp_path / "missing.txt"
    assert prompt_refusal(missing) == f"--prompts file {str(missing)!r} does not exist"


def not_regular(path, kind: str) -> str:
    return f"--prompts file {str(path)!r} is not a regular file ({kind}): expected a file"


def test_special_files_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: an ordinary open would block forever
    assert prompt_refusal(fifo) == not_regular(fifo, "a FIFO")
    assert prompt_refusal("/dev/zero") == not_regular("/dev/zero", "a character device")
    link = tmp_path / "zero.txt"
    link.symlink_to("/dev/zero")
    assert prompt_refusal(link) == not_regular(link, "a character device")
    assert prompt_refusal(tmp_path) == not_regular(tmp_path, "a folder")
    sock_path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        assert prompt_refusal(sock_path).startswith(f"--prompts file {str(sock_path)!r} ")
    finally:
        sock.close()


@pytest.mark.parametrize("argv, line", [
    (["load", "http://127.0.0.1:8000/v1\r\nHost: evil", "--rate", "1"],
     "URL 'http://127.0.0.1:8000/v1\\r\\nHost: evil': contains '\\r' at position 24; a URL has no spaces or control "
     "characters (percent-encode them)"),
    (["load", "http://127.0.0.1:99999/v1", "--rate", "1"],
     "URL 'http://127.0.0.1:99999/v1': port 99999 is out of range; expected a port 1-65535"),
    (["load", "http://127.0.0.1:9/v1", "--rate", "1", "--prompts", "/dev/zero"],
     "--prompts file '/dev/zero' is not a regular file (a character device): expected a file"),
])
def test_the_cli_refuses_before_any_request(argv, line, capsys):
    start = time.perf_counter()
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert err == f"sizeup: error: {line}\n" and time.perf_counter() - start < 5


def test_the_cli_refuses_a_fifo_and_a_binary_file(tmp_path, capsys):
    fifo = tmp_path / "prompts"
    os.mkfifo(fifo)
    binary = write(tmp_path, "model.bin", bytes(range(256)))
    for path, line in ((fifo, not_regular(fifo, "a FIFO")),
                       (binary, f"--prompts {str(binary)!r}: binary data, not prompts (control character '\\x00' on "
                                "line 1)")):
        assert main(["load", "http://127.0.0.1:9/v1", "--rate", "1", "--prompts", str(path), "--json"]) == 1
        out, err = capsys.readouterr()
        assert err == f"sizeup: error: {line}\n"
        assert json.loads(out)["error"]["exit_code"] == 1


@pytest.mark.parametrize("url, shown", [
    ("http://u:p@h:1/v1?token=abc&x=1", "http://***@h:1/v1?token=***&x=1"),
    ("https://h/v1?X-Amz-Signature=ff&X-Amz-Credential=c#frag",
     "https://h/v1?X-Amz-Signature=***&X-Amz-Credential=***#frag"),
    ("http://a@b:pw@h/?key=1&api-version=2", "http://***@h/?key=***&api-version=2"),  # up to the last '@'
    ("http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions"),
    ("http://h/p@x?access_token=", "http://h/p@x?access_token="),  # an '@' in the path is not a user
])
def test_redact_url_hides_credentials_only(url, shown):
    assert redact_url(url) == shown


def test_a_refused_url_does_not_echo_its_password():
    with pytest.raises(ConfigError) as info:
        check_url("http://alice:hunter2@h:99999/v1")
    assert "hunter2" not in str(info.value) and "***@h:99999" in str(info.value)
