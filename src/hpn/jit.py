"""Compiled kernels (numba, the ``fast`` extra) shared by routing and the engine.

**A kernel edit always recompiles.** numba's own disk cache checks only the source file of the
function it compiles: "Cache invalidation fails to recognize changes in symbols defined in
another file" (numba documentation, *Notes on Caching*, "Caching Limitations", 0.59-0.68; an
open numba pull request, #8396, would extend it to other files). A kernel whose callee lives in
another module (``engine/steps.py`` calls ``_ledger_set`` of ``engine/kernels.py``) would load
its stale machine code after that callee changed. So :func:`compile_in` keys every function's
cache by a hash (:func:`source_key`) of the source files of every module it reaches: its own,
and, transitively, those of the functions, compiled dispatchers, intrinsics and modules its code
names (numba freezes a module's global constants into the code, so the whole file counts), plus
the numba, numpy and Python versions. The cache of one key is a folder of its own under the
user's cache (``platformdirs``: ``~/.cache/hpn/kernels/KEY``; under ``$NUMBA_CACHE_DIR`` when
that is set), so identical sources share compiled code across checkouts and an edit anywhere
below a kernel compiles it again (:class:`SourceKeyLocator`, put first in numba's locators).

**Cache write races.** numba registers a freshly compiled overload *before* it writes it to the
disk cache; when that write fails with ``RuntimeError: no compiled object yet`` (seen once when
two test processes compiled the same kernels at the same moment), the kernel is nevertheless
compiled and usable in this process. `Kernel` calls it again instead of failing the run; any
other error is raised as it is.

**First run.** Compiling takes about a minute of CPU (routing's kernels most of it), paid once
per source key. On a terminal, the first compile of a kernel package prints one stderr line
before it starts, then an elapsed-time counter (:mod:`hpn.jitnotice`). Off a terminal (a pipe,
a log file), nothing is printed: stderr stays one line per error there.

**Small runs run the numpy twins.** Every kernel has numpy code beside it that gives the same
result bit for bit (the tests compare them). Loading compiled code costs a fixed ~0.3 s of CPU
for ``import numba`` and more for numba's registries and each cached kernel (~1 s in all), a
first compile ~60 s; a small run's numpy work costs less than that. :func:`kernels_for`
(which :func:`hpn.engine.sim.run_sim` enters) turns the kernels off for a run below
:data:`SMALL_WORK`, or below :data:`COLD_WORK` while its kernels are not compiled yet, and
:func:`enabled` tells each call site; ``HPN_KERNELS=numba`` or
``numpy`` overrides the choice (``auto``: by size, the default). The choice is per thread
(a server's small run leaves another thread's large one compiled). Nothing here imports
numba unless a kernel is compiled.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

from hpn.jitnotice import PROGRESS_AFTER_S, announce_compiles

CACHE_RACE = "no compiled object yet"
RETRIES = 8  # a kernel's callees may each hit it once while the kernel compiles
_LIBRARIES = ("numpy", "numba", "llvmlite", "scipy")  # their versions are in the key instead
HAVE_NUMBA = importlib.util.find_spec("numba") is not None  # the ``fast`` extra installed
ENV = "HPN_KERNELS"  # numba, numpy or auto (the default: by a run's size, :func:`kernels_for`)
SMALL_WORK = 100_000
"""A run whose size (:func:`kernels_for`'s ``work``: directed links plus flows) is below this
runs the numpy twins under ``auto``. Whole-process CPU on a loaded 2-core machine, numpy
twins against cached kernels (``hpn traffic --pattern permutation``): fat-tree k=16 (7 k)
0.7 s against 1.8 s, k=32 (57 k) 1.2 against 1.9, an HPN pod of 2 segments (19 k) 1.3
against 1.9; a whole HPN pod (142 k, HPN routing) 5.5 against 2.1."""
COLD_WORK = 1_000_000
"""Below this size, a run whose kernels are not compiled yet runs the numpy twins: compiling
costs ~60 s of CPU (a fresh clone's ``hpn collective``: 65 s cold, 2.0 s warm), more than
their work there (an HPN pod's permutation: 5.5 s; each of ``hpn demo``'s runs 0.01-0.2 s).
``HPN_KERNELS=numba`` compiles them once."""
_numpy = threading.local()  # .depth: this thread's open kernels_for(...) blocks that chose numpy
_KEYS: dict[int, tuple[str, str]] = {}  # id(py_func) -> (key, folder), set before it is jitted
_installed = False


# --- which code runs ------------------------------------------------------------------------


def _mode() -> str:
    mode = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if mode not in ("auto", "numba", "numpy"):
        from hpn.errors import InputError

        raise InputError(ENV, f"numba, numpy or auto, not {mode!r}")
    return mode


def enabled() -> bool:
    """Whether compiled kernels run now: numba is installed, ``HPN_KERNELS`` is not
    ``numpy``, and no :func:`kernels_for` block chose the numpy twins."""
    return HAVE_NUMBA and not getattr(_numpy, "depth", 0) and _mode() != "numpy"


@contextlib.contextmanager
def kernels_for(work: int, kernels: tuple[Any, ...] = ()) -> Iterator[bool]:
    """Within the block, the numpy twins when ``work`` is below :data:`SMALL_WORK`, or below
    :data:`COLD_WORK` while ``kernels`` are not compiled yet (:func:`cached`), under
    ``HPN_KERNELS=auto``; yields whether compiled kernels run.

    Parameters
    ----------
    work
        The run's size: directed links plus flows.
    kernels
        The Python functions of the kernels the run would compile first.

    Examples
    --------
    Ten links and flows take the numpy twins (unless ``HPN_KERNELS=numba``):

    >>> with kernels_for(10) as compiled:
    ...     compiled == enabled() == (_mode() == "numba" and HAVE_NUMBA)
    True
    """
    auto = _mode() == "auto" and HAVE_NUMBA
    cold = auto and SMALL_WORK <= work < COLD_WORK and not cached(kernels)
    numpy_twins = int(auto and (work < SMALL_WORK or cold))
    _numpy.depth = getattr(_numpy, "depth", 0) + numpy_twins
    start = time.perf_counter()
    try:
        yield enabled()
    finally:
        _numpy.depth -= numpy_twins
        if cold:
            _hint_compile(time.perf_counter() - start)


COLD_HINT = "ran the numpy kernels: compiled ones are not cached yet"
_hinted = False


def _hint_compile(spent_s: float) -> None:
    """After a cold run that took the numpy twins for longer than :data:`PROGRESS_AFTER_S`,
    say once, on a terminal only (as the compile notice), how to compile the kernels: runs of
    this size are ~2x faster compiled (an HPN pod's training: 13.4 s against 6.7 s of CPU)."""
    global _hinted
    if _hinted or spent_s < PROGRESS_AFTER_S or not sys.stderr.isatty():
        return
    _hinted = True
    print(
        f"note: {COLD_HINT} ({spent_s:.0f} s); HPN_KERNELS=numba compiles them once"
        " (~1 min), later runs this size are faster",
        file=sys.stderr,
    )


# --- the source key -------------------------------------------------------------------------


def _reached(fn: Any) -> Any:
    """The Python function behind a dispatcher, an intrinsic or a function (None: not code)."""
    if isinstance(fn, types.FunctionType):
        return fn
    if isinstance(fn, (type, types.ModuleType)) or fn is None:
        return None
    try:
        inner = getattr(fn, "py_func", None) or getattr(fn, "_defn", None)  # dispatcher, intrinsic
    except Exception:  # noqa: BLE001 - an object whose attributes cannot be read is no code
        return None
    return inner if isinstance(inner, types.FunctionType) else None


def _ours(module: str | None) -> bool:
    return bool(module) and str(module).partition(".")[0] not in (*_LIBRARIES, "builtins")


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def source_files(fn: Any) -> set[str]:
    """The source files of every module ``fn`` reaches (see the module docstring).

    Parameters
    ----------
    fn
        A Python function, a numba dispatcher or an intrinsic.

    Returns
    -------
    set of str
        Absolute paths.
    """
    files: set[str] = set()
    seen: set[int] = set()
    todo = [fn]
    while todo:
        f = _reached(todo.pop())
        if f is None or id(f) in seen or not _ours(getattr(f, "__module__", None)):
            continue
        seen.add(id(f))
        path = getattr(f.__code__, "co_filename", "")
        if os.path.exists(path):
            files.add(os.path.abspath(path))
        ns = f.__globals__
        for name in _names(f.__code__):
            obj = ns.get(name)
            if isinstance(obj, types.ModuleType):
                file = getattr(obj, "__file__", None)
                if _ours(obj.__name__) and file:
                    files.add(os.path.abspath(file))
                    todo.extend(vars(obj).values())  # what `mod.helper` may name
            elif obj is not None:
                todo.append(obj)
        for cell in f.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                todo.append(cell.cell_contents)
    return files


def source_key(fn: Any) -> str:
    """A hash of the sources ``fn`` reaches and of the numba, numpy and Python versions.

    Parameters
    ----------
    fn
        A Python function, a numba dispatcher or an intrinsic.

    Returns
    -------
    str
        Hex digest (20 characters).
    """
    import numpy

    h = hashlib.sha256(f"{_numba_version()} {numpy.__version__} {sys.version}".encode())
    digests = []
    for path in source_files(fn):  # contents, not paths: equal checkouts share the cache
        with open(path, "rb") as fh:
            digests.append(hashlib.sha256(fh.read()).digest())
    for d in sorted(digests):
        h.update(d)
    return h.hexdigest()[:20]


def _numba_version() -> str:
    """``numba.__version__``, read from the installed package's metadata while numba is not
    imported (:func:`cached` asks before any kernel runs)."""
    numba = sys.modules.get("numba")
    if numba is not None:
        return str(numba.__version__)
    from importlib.metadata import version

    return version("numba")


def cached(fns: tuple[Any, ...]) -> bool:
    """Whether numba's disk cache holds compiled code of each of ``fns`` (Python functions)
    for their current sources (:func:`source_key`), without importing numba.

    Parameters
    ----------
    fns
        Kernels' Python functions.

    Returns
    -------
    bool
    """
    if not HAVE_NUMBA:
        return False
    for fn in fns:
        stem = f"{fn.__qualname__}-{fn.__code__.co_firstlineno}."
        try:
            names = os.listdir(os.path.join(cache_root(), source_key(fn)))
        except OSError:
            return False
        if not any(stem in n and n.endswith(".nbi") for n in names):
            return False
    return True


def cache_root() -> str:
    """Where keyed kernel caches live: ``$NUMBA_CACHE_DIR/hpn-kernels`` when set, else the
    user's cache folder (``platformdirs``)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.path.join(os.environ["NUMBA_CACHE_DIR"], "hpn-kernels")
    from platformdirs import user_cache_dir

    return os.path.join(user_cache_dir("hpn"), "kernels")


KEEP_DAYS = 30
"""A key's folder unused (not written) for this long is removed: edits leave old keys behind."""


def _prune(root: str, now: float | None = None) -> None:
    """Remove the key folders under ``root`` not written for :data:`KEEP_DAYS` days."""
    import shutil

    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for e in entries:
        try:
            if e.is_dir() and now - e.stat().st_mtime > KEEP_DAYS * 86_400:
                shutil.rmtree(e.path, ignore_errors=True)
        except OSError:
            continue


def _install_locator() -> None:
    """Put :class:`SourceKeyLocator` first among numba's cache locators (once), and prune
    old keys (:func:`_prune`)."""
    global _installed
    if _installed:
        return
    _installed = True
    _prune(cache_root())
    from numba.core import caching

    class SourceKeyLocator(caching._CacheLocator):
        """numba's cache of one function under the folder of its source key: the stamp is
        the key (numba's index is then stale exactly when a reached source changed)."""

        def __init__(self, py_func: Any, py_file: str, key: str, folder: str) -> None:
            self._lineno = py_func.__code__.co_firstlineno
            self._key = key
            self._cache_path = folder

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> str:
            return self._key

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            found = _KEYS.get(id(py_func))
            if found is None:
                return None  # not ours: numba's own locators
            self = cls(py_func, py_file, *found)
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: numba's own locators
                return None
            return self

    locators: Any = caching.CacheImpl._locator_classes
    locators.insert(0, SourceKeyLocator)


# --- kernels ----------------------------------------------------------------------------------


class Kernel:
    """A compiled function that survives numba's failed cache writes on its first calls.

    Parameters
    ----------
    fn
        The numba dispatcher (or any callable).

    Examples
    --------
    >>> calls = []
    >>> def flaky(x):
    ...     calls.append(x)
    ...     if len(calls) == 1:
    ...         raise RuntimeError("no compiled object yet for <Library 'k'>")
    ...     return 2 * x
    >>> Kernel(flaky)(21), len(calls)
    (42, 2)
    """

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        if hasattr(fn, "py_func"):  # a numba dispatcher
            announce_compiles(cache_root)

    def __call__(self, *args: Any) -> Any:
        for _ in range(RETRIES):
            try:
                return self.fn(*args)
            except RuntimeError as e:
                if CACHE_RACE not in str(e):
                    raise
        return self.fn(*args)


def keyed_jit(fn: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, **options)(fn)``, cached under ``fn``'s source key.

    Parameters
    ----------
    fn
        The Python function (its callees already compiled, so the key sees them).
    **options
        More numba options.

    Returns
    -------
    numba dispatcher
    """
    import numba

    _install_locator()
    key = source_key(fn)
    _KEYS[id(fn)] = (key, os.path.join(cache_root(), key))
    njit: Any = numba.njit  # (``_nrt`` is not in numba's type stubs)
    return njit(cache=True, nogil=True, **options)(fn)


def compile_in(
    namespace: dict[str, Any],
    helpers: tuple[str, ...] = (),
    kernels: dict[str, str] | None = None,
    **options: Any,
) -> dict[str, Kernel]:
    """Compile a module's numba functions on first use (``cache=True, nogil=True``), each
    cached under its source key (:func:`keyed_jit`).

    Parameters
    ----------
    namespace
        The module's globals: each of ``helpers`` is replaced there by its compiled
        version, in order (a kernel's callees first, so the kernel calls compiled code).
    helpers
        Names of the functions the kernels call.
    kernels
        ``{kernel name: function name}`` of the entry points.
    **options
        More numba options (``_nrt=False``: no reference counting, for helpers that
        allocate nothing).

    Returns
    -------
    dict
        The kernels by name, each wrapped in `Kernel`.
    """
    for name in helpers:
        namespace[name] = keyed_jit(namespace[name], **options)
    return {
        name: Kernel(keyed_jit(namespace[fn], **options)) for name, fn in (kernels or {}).items()
    }
