"""sizeup/memo.py: a kept result is returned only for the very same objects at an equal version, and the memo holds
at most its bound."""

from sizeup.ledger import Ledger, OpKind, OpRecord
from sizeup.memo import IdentityMemo
from sizeup.price.rates import op_classes


def test_a_result_is_kept_for_the_same_objects_only():
    memo = IdentityMemo(4)
    a, b = [1, 2], [1, 2]  # equal, not the same
    memo.put((a,), 2, "of a")
    assert memo.get((a,), 2) == "of a"
    assert memo.get((b,), 2) is None
    assert memo.get((a,), 3) is None  # the object changed since (its version)


def test_the_oldest_entry_goes_first_once_full():
    memo = IdentityMemo(3)
    keys = [[i] for i in range(5)]
    for k in keys:
        memo.put((k,), None, k[0])
    assert len(memo) == 3
    assert [memo.get((k,)) for k in keys] == [None, None, 2, 3, 4]


def _op(flops: int) -> OpRecord:
    return OpRecord(op="aten.mm", kind=OpKind.MATMUL, scope="layer", flops=flops, matmul_flops=flops, bytes_read=4,
                    bytes_written=4)


def test_a_ledger_built_further_after_pricing_is_classified_again():
    ledger = Ledger(ops=[_op(10)])
    first = op_classes(ledger)
    assert op_classes(ledger) is first  # kept
    ledger.add(_op(20))
    again = op_classes(ledger)
    assert again.tensor_flops == [10.0, 20.0]
    ledger.ops = [_op(30)]  # a new list of the same length
    assert op_classes(ledger).tensor_flops == [30.0]


def test_a_ledger_whose_op_is_replaced_in_place_is_priced_again():
    """The same list, the same length, another op: a count as the version would return the old price."""
    from sizeup.hardware.catalog import load_catalog
    from sizeup.price.efficiency import device_efficiency
    from sizeup.workload.inference import _priced

    ledger = Ledger(ops=[_op(10), _op(20)])
    assert op_classes(ledger).tensor_flops == [10.0, 20.0]
    ledger.ops[1] = _op(40)
    assert op_classes(ledger).tensor_flops == [10.0, 40.0]
    ledger.ops.pop()
    ledger.add(_op(80))  # removed and added: the count is back where it was
    assert op_classes(ledger).tensor_flops == [10.0, 80.0]

    device = load_catalog().device("h100-sxm")
    eff = device_efficiency(device)
    before = _priced(ledger, device, eff)
    ledger.ops[1] = _op(8 * 10**15)
    after = _priced(ledger, device, eff)
    assert after is not before and after != before


def test_threads_sharing_a_memo_keep_its_bound_and_get_only_their_own_values():
    import sys
    import threading

    memo, errors = IdentityMemo(8), []
    keys = [[i] for i in range(64)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the threads as often as the interpreter allows

    def work(offset: int) -> None:
        try:
            for n in range(2_000):
                k = keys[(n + offset) % len(keys)]
                got = memo.get((k,))
                if got is not None and got != k[0]:
                    errors.append((k[0], got))
                memo.put((k,), None, k[0])
                if len(memo) > memo.kept:
                    errors.append(("over the bound", len(memo)))
        except Exception as e:  # noqa: BLE001 - a race would show as any exception
            errors.append(e)

    try:
        threads = [threading.Thread(target=work, args=(i * 7,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == [] and len(memo) <= memo.kept
