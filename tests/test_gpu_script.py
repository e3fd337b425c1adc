"""ptrm_cli.gpu_script: the options and JSON the GPU measurement scripts share."""

from __future__ import annotations

import json

from ptrm_cli import gpu_script


def test_a_timed_scripts_options_and_an_untimed_ones():
    timed = gpu_script.parser("Time it.\n\nMore.").parse_args(["--iters", "5"])
    assert (timed.rows, timed.tokens, timed.iters, timed.json) == (6100, 116, 5, None)
    p = gpu_script.parser("Compare it.", rows=500, timed=False)
    assert p.description == "Compare it."
    args = p.parse_args([])
    assert args.rows == 500 and not hasattr(args, "iters")


def test_json_is_written_only_where_asked(tmp_path):
    gpu_script.write_json(None, {"a": 1})  # no --json: nothing, no error
    assert list(tmp_path.iterdir()) == []
    gpu_script.write_json(str(tmp_path / "o.json"), {"a": 1})
    assert json.loads((tmp_path / "o.json").read_text()) == {"a": 1}
