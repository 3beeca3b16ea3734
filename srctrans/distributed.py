"""Dask for srctrans: the client whose workers are the devices of ``backend="dask"``.

:func:`connect` returns a ``distributed.Client`` and remembers it as the current one:

- ``connect()`` starts an embedded ``LocalCluster`` on loopback (``127.0.0.1``): two
  worker processes with one thread each, no dashboard. It is closed with :func:`close`
  (or when the program exits).
- ``connect("tcp://host:8786")`` connects to a running scheduler; when none answers
  within ``timeout`` seconds, :class:`SchedulerUnreachableError` names the address.

``pmap(f, backend="dask")`` and ``srctrans.devices("dask")`` use :func:`current_client`:
the client :func:`connect` returned, else Dask's default client (one the program made
itself), else the scheduler that Dask's configuration names (``DASK_SCHEDULER_ADDRESS``),
else a fresh embedded cluster (``connect()``). Each worker is one device
(:func:`worker_addresses` gives their order); what runs on them is
:mod:`numba_backend.dask_runner`.

Needs ``pip install 'srctrans[dask]'`` (``dask[distributed]``); nothing here imports
Dask until it is called.
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import BackendUnavailableError

__all__ = ["SchedulerUnreachableError", "close", "connect", "current_client", "worker_addresses"]

_LOCK = threading.RLock()
_STATE: dict[str, Any] = {"client": None, "cluster": None}


class SchedulerUnreachableError(BackendUnavailableError):
    """No Dask scheduler answered at the address given (``address`` says which)."""

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address


def _import_distributed():
    try:
        import distributed
    except ImportError as err:
        raise BackendUnavailableError(
            "backend='dask' needs Dask's distributed scheduler, which is not installed "
            "(pip install 'srctrans[dask]', or pip install 'dask[distributed]')"
        ) from err
    return distributed


def connect(
    address: str | None = None,
    *,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    processes: bool = True,
    timeout: float = 10.0,
    **cluster_options: Any,
):
    """A ``distributed.Client``, remembered as the current one for ``backend="dask"``.

    ``address`` (``"tcp://host:port"``): connect to that scheduler; a
    :class:`SchedulerUnreachableError` naming it when none answers within ``timeout``
    seconds. No address: start an embedded ``LocalCluster`` on 127.0.0.1 with
    ``n_workers`` worker processes (``processes=False``: threads of this process) of
    ``threads_per_worker`` threads, no dashboard; ``cluster_options`` go to
    ``LocalCluster`` (``env={...}`` sets environment variables of the workers).
    A client connected earlier by this function (and its embedded cluster) is closed first.
    """
    distributed = _import_distributed()
    if address is not None and not isinstance(address, str):
        raise TypeError(
            f"connect(address=...) takes a scheduler address such as 'tcp://127.0.0.1:8786', got {address!r}"
        )
    if address is None:
        if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
            raise ValueError(f"connect(n_workers={n_workers!r}): give a positive whole number of workers")
        if not isinstance(threads_per_worker, int) or isinstance(threads_per_worker, bool) or threads_per_worker < 1:
            raise ValueError(
                f"connect(threads_per_worker={threads_per_worker!r}): give a positive whole number of threads"
            )
    with _LOCK:
        close()
        if address is None:
            # no dashboard; the scheduler's small HTTP server (health checks) on a free loopback port
            options = {
                "dashboard_address": None,
                "host": "127.0.0.1",
                "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
            }
            # threads of this process still talk TCP on loopback (Dask's in-process transport takes no host)
            if not processes:
                options["protocol"] = "tcp://"
            options.update(cluster_options)
            cluster = distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=threads_per_worker, processes=processes, **options
            )
            try:
                client = distributed.Client(cluster, set_as_default=False)
            except BaseException:
                cluster.close()
                raise
            _STATE["cluster"] = cluster
        else:
            client = _client_at(distributed, address, timeout)
        _STATE["client"] = client
        return client


def _client_at(distributed, address: str, timeout: float):
    """A client of the scheduler at ``address``; the clear error when none answers."""
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise SchedulerUnreachableError(
            f"backend='dask': no Dask scheduler answered at {address!r} within {timeout:g} s ({type(err).__name__}: "
            f"{str(err).strip() or 'no answer'}). Start one there (`dask scheduler` and `dask worker {address}`), "
            "pass the address of a running one to srctrans.distributed.connect(address), or call connect() with no "
            "address for a local cluster on this machine",
            address,
        ) from None


def client_alive(client) -> bool:
    return client is not None and getattr(client, "status", None) in ("running", "connecting", "newly-created")


def current_client(start: bool = True):
    """The client ``backend="dask"`` uses (see the module docstring); None when there is none and not ``start``."""
    with _LOCK:
        client = _STATE["client"]
        if client_alive(client):
            return client
        distributed = _import_distributed()
        try:
            default = distributed.Client.current(allow_global=True)
        except ValueError:
            default = None
        if client_alive(default):
            return default
        if not start:
            return None
        import dask

        address = dask.config.get("scheduler-address", None)
        if address:
            from dask.utils import parse_timedelta

            timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect", "10s"), default="s")
            client = _client_at(distributed, str(address), float(timeout or 10.0))
            _STATE["client"] = client
            return client
        return connect()


def worker_addresses(client=None) -> list[str]:
    """The addresses of the client's workers in device order (by worker name, then address)."""
    client = client if client is not None else current_client()
    workers = client.scheduler_info(n_workers=-1)["workers"]

    def order(item):
        address, info = item
        name = info.get("name", address)
        text = str(name)
        return (0, int(text), address) if text.isdigit() else (1, text, address)

    return [address for address, _ in sorted(workers.items(), key=order)]


def close() -> None:
    """Close the client :func:`connect` made, and the embedded cluster it started, if any."""
    with _LOCK:
        client, cluster = _STATE["client"], _STATE["cluster"]
        _STATE["client"] = _STATE["cluster"] = None
        if client is not None:
            try:
                client.close()
            except Exception:  # pragma: no cover - closing a client whose scheduler is gone
                pass
        if cluster is not None:
            try:
                cluster.close()
            except Exception:  # pragma: no cover
                pass
