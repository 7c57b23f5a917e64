"""The edge and host-floor check rows added 2026-12-05 (rows_mlc_jetson.yaml, rows_exllamav2.yaml; docs/engines.md
"Edge rows added, and the gaps that stay unpriced") price through their own commands, land in the device class
validate_local_engines.py groups them by, and stay check rows: nothing is fit on them."""

from tests.validation.bench import load_benchmark, runner

ADDED = {
    "mlc-jc412dusty-agxorin-llama2-7b-q4f16ft-tg": "edge",
    "mlc-jc451dusty-agxorin64-llama2-70b-q4f16ft-tg": "edge",
    "mlc-nanollm38-orinnx16-tinyllama-q4f16ft-tg": "edge",
    "lcpp-realizar120-orinnano8-qwen25-1.5b-q4km-tg": "edge",
    "exl2-109-a100-40gb-llama13b-exl2-4.0bpw-tg": "datacenter",
    "exl2-109-a100-40gb-llama30b-exl2-4.0bpw-tg": "datacenter",
}


def test_added_rows_price_through_their_commands_in_their_device_class():
    rows = {r.id: r for r in load_benchmark("validate_local_engines").research_rows() if r.id in ADDED}
    assert sorted(rows) == sorted(ADDED)
    for row_id, row in rows.items():
        assert row.role == "check", row_id
        assert runner.context(row).device_class == ADDED[row_id], row_id
        predicted = runner.predict(row)
        assert 0 < predicted.low <= predicted.typical <= predicted.high, row_id

