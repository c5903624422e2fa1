"""Data-parallel training: workers that each train on a share of every batch, gradients averaged.

``k`` workers hold the same model. Every training batch is cut as one
worker cuts a batch ``k`` times larger (``k`` times the documents and the
token budget), and each worker trains on every ``k``-th of its documents;
after the backward pass the workers' gradients are averaged, each weighed
by the documents (the translator: the target tokens) it trained on, with one
``all_reduce`` of :mod:`torch.distributed`, so that every worker takes the
same step, the one a single worker would take on the whole batch. Each
worker validates its share of the validation batches and the workers
exchange the results, they agree on when an epoch is cut short (the time
budget), and rank 0 alone writes checkpoints and progress.

The workers are either started by ``fit`` itself on this machine
(:func:`run_workers`: ``n_workers`` processes forked from the caller, one
group of the gloo backend over a file store) or are the processes of a
:mod:`torch.distributed` group that a launcher (``torchrun``) started and the
caller initialised (:func:`joined_workers`).
"""

import dataclasses
import datetime
import io
import multiprocessing
import os
import signal
import tempfile
import threading
import time
import traceback
from multiprocessing import connection

import torch
import torch.distributed as dist

__all__ = ["WorkerError", "Workers", "check_workers", "joined_workers", "run_workers"]

#: How long a collective waits for a worker that does not join it; a worker that
#: dies is noticed at once by the process that started it (:func:`run_workers`).
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=30)

#: Seconds the check that torch trains in a forked process (:func:`check_fork`) waits.
FORK_CHECK_TIMEOUT = 60

#: Seconds between a forked worker's checks that the process that started it still runs.
PARENT_CHECK_INTERVAL = 0.5


class WorkerError(RuntimeError):
    """A training worker failed: it raised (the message holds its traceback) or died."""


@dataclasses.dataclass(frozen=True)
class Workers:
    """The processes one fit trains on, seen from one of them.

    Attributes
    ----------
    rank : int
        This process's rank, 0 to ``size - 1``; rank 0 writes checkpoints
        and progress and holds the result.
    size : int
        How many workers train the model.
    """

    rank: int
    size: int

    @property
    def device(self):
        """Where the group's collectives take their tensors: the current GPU for NCCL."""
        if dist.get_backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def average_gradients(self, parameters, weight, samples):
        """Replace the gradients of ``parameters`` by the workers' mean, weighed by ``weight``.

        ``weight`` is this worker's share of the step (the documents or
        tokens its loss is a mean over) and ``samples`` the samples
        (documents, sentence pairs) of its share; a parameter without a
        gradient counts as a zero gradient. One ``all_reduce`` of one flat
        buffer.

        Returns
        -------
        samples : int
            The step's samples over every worker.
        """
        parameters = [p for p in parameters if p.requires_grad]
        # The weights stay float32 under every precision: one buffer holds them all,
        # the step's weight and samples at its end.
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        device = parameters[0].device if parameters else self.device
        tail = torch.tensor([1.0, samples], device=device)
        flat = torch.cat([g.reshape(-1) for g in grads] + [tail])
        flat[:-1].mul_(float(weight))
        dist.all_reduce(flat)
        mean = flat[:-2] / flat[-2]
        for p, part in zip(parameters, mean.split([p.numel() for p in parameters])):
            p.grad = part.view_as(p)
        return int(flat[-1].item())

    def any(self, flag):
        """Whether ``flag`` holds on any worker."""
        value = torch.tensor([int(bool(flag))], device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def gathered(self, value):
        """Every worker's ``value`` (any picklable object), by rank, on every worker."""
        values = [None] * self.size
        dist.all_gather_object(values, value)
        return values

    def shared(self, value):
        """Rank 0's ``value`` (any picklable object), on every worker."""
        box = [value if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def check_workers(size, precision, n_rows, device, forked):
    """Refuse, before any work, a fit over ``size`` workers that cannot train.

    ``precision`` and ``device`` are the fit's; ``n_rows`` the documents it
    trains and validates on; ``forked``: whether this process would start
    the workers (not a launcher).
    """
    if size == 1:
        return
    if forked and device.type != "cpu":
        raise ValueError(
            f"n_workers={size} forks this process, and forked processes cannot use "
            f"device={str(device)!r}; on GPUs start one process per GPU with torchrun "
            "(see the user guide's Scaling out page), or set n_workers=1."
        )
    if precision == "16-mixed":
        raise ValueError(
            f"precision='16-mixed' cannot train over {size} workers (each would skip the "
            "steps its own gradients overflow on); use precision='bf16', or n_workers=1."
        )
    if n_rows < size:
        raise ValueError(
            f"Training over {size} workers needs at least {size} documents, got {n_rows}; "
            "set n_workers=1."
        )


def joined_workers():
    """The :class:`Workers` of the :mod:`torch.distributed` group this process belongs to.

    ``None`` unless the caller initialised the default process group (e.g.
    a script started by ``torchrun`` that called
    ``torch.distributed.init_process_group()``). A group of one process
    trains through it too: the same collectives, on one GPU the NCCL path.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return Workers(dist.get_rank(), dist.get_world_size())


def run_workers(size, work, threads, group=True):
    """Run ``work(workers)`` in ``size`` processes forked from this one; return their results.

    With ``group``, the workers form a gloo group over a file store in a
    temporary folder (for their collectives); each runs ``threads`` torch
    threads. A worker that raises or dies ends the others at once and
    raises :class:`WorkerError` here (the worker's own exception as its
    cause, where it can be pickled); an interruption here
    (``KeyboardInterrupt``) ends every worker, and so does the end of this
    process by a signal, which runs no clean-up (:func:`_end_with`). The
    results travel back saved by :func:`torch.save`.

    Parameters
    ----------
    size : int
        How many workers.
    work : callable
        ``work(workers) -> result``; called in every worker with its
        :class:`Workers`.
    threads : int
        torch threads per worker.
    group : bool, default=True
        Whether the workers join a :mod:`torch.distributed` group.

    Returns
    -------
    results : list
        What ``work`` returned, by rank.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"n_workers={size} starts its workers by forking this process, which this "
            "platform cannot do; set n_workers=1, or start one process per worker "
            "with torchrun (see the user guide's Scaling out page)."
        )
    context = multiprocessing.get_context("fork")
    if group:
        check_fork(context, size)
    with tempfile.TemporaryDirectory(prefix="sklearn_lama-workers-") as folder:
        store = os.path.join(folder, "store")
        processes, readers = [], []
        try:
            for rank in range(size):
                reader, writer = context.Pipe(duplex=False)
                process = context.Process(
                    target=_worker,
                    args=(
                        work,
                        Workers(rank, size),
                        store if group else None,
                        threads,
                        writer,
                        os.getpid(),
                    ),
                    daemon=True,
                )
                process.start()
                writer.close()
                processes.append(process)
                readers.append(reader)
            return _supervise(processes, readers)
        finally:
            for process in processes:
                if process.is_alive():
                    process.kill()
            for process in processes:
                process.join()


def check_fork(context, size):
    """Refuse ``size`` training workers forked from this process where torch cannot train in them.

    torch cannot run a backward pass in a process forked from one that has
    used CUDA or started autograd's GPU threads (any backward pass on a
    machine with a GPU): see PyTorch's "Autograd and Fork". One child forked
    by ``context`` runs a backward pass of one element first; it fails, dies
    or outlasts :data:`FORK_CHECK_TIMEOUT` and the fit is refused, before
    any work.
    """
    child = context.Process(target=_backward_and_exit, daemon=True)
    child.start()
    child.join(FORK_CHECK_TIMEOUT)
    if child.is_alive():
        child.kill()
        child.join()
    if child.exitcode != 0:
        raise ValueError(
            f"n_workers={size} forks this process, but torch cannot train in a process "
            "forked from this one: it has used CUDA, or trained, on a machine with a GPU "
            "(PyTorch's 'Autograd and Fork'). Fit over workers in a fresh Python process, "
            "before any other training, start one process per worker with torchrun (see "
            "the user guide's Scaling out page), or set n_workers=1."
        )


def _backward_and_exit():
    """A forked child's check: a backward pass of one element, then exit 0 (1 if it raised)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = 1
    try:
        torch.set_num_threads(1)
        x = torch.ones(1, requires_grad=True)
        (2 * x).sum().backward()
        code = 0 if float(x.grad) == 2.0 else 1
    finally:
        os._exit(code)


def _supervise(processes, readers):
    """Wait for every worker's report; their results by rank, or the first failure raised."""
    results, pending = [None] * len(processes), set(range(len(processes)))
    while pending:
        waiting = {readers[rank]: rank for rank in pending}
        waiting.update({processes[rank].sentinel: rank for rank in pending})
        for ready in connection.wait(list(waiting)):
            rank = waiting[ready]
            if rank not in pending:
                continue
            reader = readers[rank]
            if ready is reader or reader.poll():
                try:
                    kind, payload = reader.recv()
                except EOFError:
                    kind, payload = "died", None
            else:
                kind, payload = "died", None
            if kind == "done":
                pending.discard(rank)
                results[rank] = torch.load(io.BytesIO(payload), weights_only=False)
            elif kind == "error":
                message, cause = payload
                raise WorkerError(f"training worker {rank} failed:\n{message}") from cause
            else:
                processes[rank].join()
                raise WorkerError(
                    f"training worker {rank} ended without a result (exit code "
                    f"{processes[rank].exitcode}): killed, or out of memory?"
                )
    return results


def _end_with(parent):
    """End this process soon after the process ``parent`` (its pid) has ended.

    A caller killed by a signal runs no clean-up, the end of its daemon
    workers included: its workers would train on, unobserved, to the end of
    the fit. A daemon thread checks every :data:`PARENT_CHECK_INTERVAL`
    seconds whether this process still has ``parent`` for its parent (an
    orphan is given another), and exits the process when it does not.
    """

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_INTERVAL)
        os._exit(1)

    threading.Thread(target=watch, name="sklearn_lama-parent-watch", daemon=True).start()


def _worker(work, workers, store, threads, writer, parent):
    """A worker's process: join the group (``store``: its file), ``work``, report, exit.

    ``parent`` is the pid of the process that forked it: the worker ends when that
    process has ended (:func:`_end_with`).
    """
    # The parent handles an interruption and ends the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with(parent)
    try:
        torch.set_num_threads(threads)
        if store is not None:
            dist.init_process_group(
                "gloo",
                store=dist.FileStore(store, workers.size),
                rank=workers.rank,
                world_size=workers.size,
                timeout=COLLECTIVE_TIMEOUT,
            )
        buffer = io.BytesIO()
        torch.save(work(workers), buffer)
        writer.send(("done", buffer.getvalue()))
    except BaseException as exc:  # noqa: BLE001 — every failure goes back to the parent
        message = traceback.format_exc()
        try:
            writer.send(("error", (message, exc)))
        except Exception:  # the exception itself does not pickle
            writer.send(("error", (message, None)))
    finally:
        writer.close()
        # The forked copy of the caller (a test runner, a notebook) must not run its exit handlers.
        os._exit(0)
