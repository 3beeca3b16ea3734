"""srctrans.distributed.connect and backend="dask" when no Dask scheduler answers: a clear error naming the address."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

import dask  # noqa: E402

import srctrans  # noqa: E402
from srctrans import distributed as sd  # noqa: E402
from srctrans.parallel.devices import BackendUnavailableError  # noqa: E402

from . import pmap_functions as fns  # noqa: E402


def _closed_address() -> str:
    """A loopback address where nothing listens (a port the system just handed out and took back)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def test_connect_to_an_address_where_no_scheduler_answers():
    address = _closed_address()
    start = time.monotonic()
    with pytest.raises(
        sd.SchedulerUnreachableError, match=f"no Dask scheduler answered at '{address}' within 1 s"
    ) as info:
        sd.connect(address, timeout=1)
    assert time.monotonic() - start < 10
    assert info.value.address == address
    assert isinstance(info.value, BackendUnavailableError)
    assert sd.current_client(start=False) is None


def test_pmap_on_dask_with_an_unreachable_configured_scheduler(monkeypatch):
    sd.close()
    address = _closed_address()
    with dask.config.set({"scheduler-address": address, "distributed.comm.timeouts.connect": "1s"}):
        p = srctrans.pmap(fns.centered, axis_name="i", backend="dask")
        with pytest.raises(
            sd.SchedulerUnreachableError, match=f"backend='dask': no Dask scheduler answered at '{address}'"
        ):
            p(np.arange(4.0))


def test_connect_checks_its_arguments():
    with pytest.raises(TypeError, match="scheduler address"):
        sd.connect(8786)
    with pytest.raises(ValueError, match="n_workers=0"):
        sd.connect(n_workers=0)
