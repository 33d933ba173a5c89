"""admiss.toml: search order, the tables, defaults, and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from admiss.config import Config, GateDefaults, Price, ProviderConfig, find_config, load_config, read_config
from admiss.errors import InputError

FULL = """\
# a comment
[providers.local]
base_url = "http://127.0.0.1:8000/v1/"
api_key_env = "LOCAL_KEY"
timeout_s = 12.5
max_retries = 0

[providers.ollama]
base_url = "http://localhost:11434/v1"

[prices."OpenAI/GPT-5"]
input_usd_per_mtok = 1.25
output_usd_per_mtok = 10

[gates]
subprocess_usd_per_second = 0.001
budget_rate = 0.25
budget_window = 10
budget_min_runs = 3
"""


def write(folder: Path, text: str, name: str = "admiss.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_config(path)
    return caught.value, caught.value.diagnostics[0]


def test_every_table_is_read(tmp_path):
    config = read_config(write(tmp_path, FULL))
    assert config.providers == {
        "local": ProviderConfig("local", "http://127.0.0.1:8000/v1", "LOCAL_KEY", 12.5, 0),
        "ollama": ProviderConfig("ollama", "http://localhost:11434/v1"),
    }
    assert config.price_for("openai/gpt-5") == Price(1.25, 10.0)
    assert config.price_for("openai/gpt-5-mini") is None
    assert config.gates == GateDefaults(0.001, 0.25, 10, 3)


def test_the_route_keys_are_read_with_files_relative_to_the_config(tmp_path):
    write(tmp_path / "certs", "x", "ca.pem")
    write(tmp_path / "certs", "x", "me.pem")
    config = read_config(write(tmp_path, '[providers.a]\nbase_url = "https://x"\nproxy = ""\nca_file = "certs/ca.pem"\n'
                                         'client_cert = "certs/me.pem"\nhttp2 = true\nidle_timeout_s = 5\n'
                                         'retry_budget_s = 10\nmax_retry_after_s = 2\n'))
    assert config.providers["a"] == ProviderConfig(
        "a", "https://x", proxy="", ca_file=tmp_path / "certs" / "ca.pem", client_cert=tmp_path / "certs" / "me.pem",
        http2=True, idle_timeout_s=5.0, retry_budget_s=10.0, max_retry_after_s=2.0)


def test_the_defaults(tmp_path):
    config = load_config(cwd=tmp_path)
    assert config == Config()
    assert config.gates == GateDefaults(subprocess_usd_per_second=0.0, budget_rate=0.5, budget_window=20, budget_min_runs=5)
    assert ProviderConfig("p", "http://x").timeout_s == 60 and ProviderConfig("p", "http://x").max_retries == 2


def test_search_order_explicit_then_beside_the_rubric_then_working_folder(tmp_path):
    rubric = tmp_path / "rubrics" / "r.rubric"
    cwd_config = write(tmp_path / "cwd", "")
    assert find_config(rubric=rubric, cwd=tmp_path / "cwd") == cwd_config
    beside = write(rubric.parent, "")
    assert find_config(rubric=rubric, cwd=tmp_path / "cwd") == beside
    explicit = write(tmp_path / "elsewhere", "", "custom.toml")
    assert find_config(explicit, rubric=rubric, cwd=tmp_path / "cwd") == explicit


def test_an_explicit_config_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(InputError, match="config file not found"):
        load_config(tmp_path / "missing.toml")


def test_a_syntax_error_is_located(tmp_path):
    error, diagnostic = error_of(tmp_path, '[gates]\nbudget_rate = 0.5\nbudget_window = = 3\n')
    assert (diagnostic.span.line, diagnostic.span.column) == (3, 17)
    assert diagnostic.message.startswith("TOML syntax error: Invalid value")
    rendered = str(error)
    assert rendered.startswith(f"{tmp_path / 'admiss.toml'}:3:17: E001 TOML syntax error")
    assert "budget_window = = 3" in rendered and "^" in rendered


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ('[providers.a]\nbase_url = "http://x"\ntimeout_s = "5"\n', 3, 'providers.a.timeout_s must be a number, not a string'),
        ('[providers.a]\nbase_url = "http://x"\nmax_retries = true\n', 3, "must be an integer, not a boolean"),
        ('[providers.a]\nbase_url = "http://x"\nmax_retries = -1\n', 3, "must be at least 0"),
        ('[providers.a]\nbase_url = "localhost:8000"\n', 2, "base_url must start with http:// or https://"),
        ('[providers.a]\napi_key_env = "K"\n', 1, "[providers.a] needs base_url"),
        ('[prices."x/y"]\ninput_usd_per_mtok = 1\n', 1, '[prices."x/y"] needs output_usd_per_mtok'),
        ('[prices."x/y"]\ninput_usd_per_mtok = -1\noutput_usd_per_mtok = 1\n', 2, "must be a finite number >= 0"),
        ('\n[gates]\nbudget_rate = 1.5\n', 3, "budget_rate is a share of runs between 0 and 1"),
        ('[gates]\nbudget_window = 0\n', 2, "budget_window must be at least 1"),
        ('[providers.a]\nbase_url = "http://x"\n[providers.b]\nbase_url = "http://y"\ntimeout_s = 0\n', 5, "greater than 0"),
        ('providers = 3\n', 1, "providers must be a table, not an integer"),
        ('[providers.a]\nbase_url = "https://x"\nca_file = "no.pem"\n', 3, "providers.a.ca_file names no.pem, which is not a file"),
        ('[providers.a]\nbase_url = "https://x"\nclient_cert = "no.pem"\n', 3, "providers.a.client_cert names no.pem"),
        ('[providers.a]\nbase_url = "https://x"\nclient_key = "admiss.toml"\n', 3, "client_key needs client_cert"),
        ('[providers.a]\nbase_url = "https://x"\nproxy = "proxy:3128"\n', 3, "proxy must start with http://"),
        ('[providers.a]\nbase_url = "https://x"\nhttp2 = "yes"\n', 3, "providers.a.http2 must be true or false"),
        ('[providers.a]\nbase_url = "https://x"\nretry_budget_s = 0\n', 3, "greater than 0"),
        ('[providers.a]\nbase_url = "https://x"\nidle_timeout_s = -1\n', 3, "greater than 0"),
        ('[providers.a]\nbase_url = "https://x"\nmax_retry_after_s = nan\n', 3, "a finite number >= 0"),
    ],
)
def test_a_wrong_value_is_located_at_its_key(tmp_path, text, line, says):
    _, diagnostic = error_of(tmp_path, text)
    assert says in diagnostic.message
    assert diagnostic.span.line == line


def test_an_unknown_key_is_an_error_with_a_suggestion(tmp_path):
    _, diagnostic = error_of(tmp_path, '[providers.openai]\nbase_url = "https://api.openai.com/v1"\napi_key_var = "K"\n')
    assert diagnostic.message == "unknown key providers.openai.api_key_var"
    assert diagnostic.hint == "did you mean 'api_key_env'?"
    assert (diagnostic.span.line, diagnostic.span.column) == (3, 1)


def test_an_unknown_table_is_an_error(tmp_path):
    _, diagnostic = error_of(tmp_path, "[provider.openai]\nbase_url = 'x'\n")
    assert diagnostic.message == "unknown key provider"
    assert diagnostic.hint == "did you mean 'providers'?"
    assert (diagnostic.span.line, diagnostic.span.column) == (1, 1)
