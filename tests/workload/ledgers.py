"""Small ledgers the tensor-parallel and multi-node tests price."""
from sizeup.ledger import Ledger, OpKind, OpRecord


def all_reduce_ledger(nbytes: int, layers: int) -> Ledger:
    """Two all-reduces of `nbytes` per layer, as a transformer's tensor-parallel decode step runs them."""
    return Ledger(ops=[OpRecord(op="all_reduce", kind=OpKind.COMM, scope="layers", bytes_written=nbytes,
                                count=2 * layers)])
