"""The bad-input corpus: every command, fed what a user (or an attacker) might type.

Each case is ``(args, fragments)``: running ``hpn ARGS`` must exit 2 with exactly one line on
stderr that contains every fragment (the field or file it names, what is allowed; ``_`` and
``-`` match alike, ``a|b`` is either wording), no
traceback, nothing on stdout, and nothing written (no run folder, no index row, no file).

To extend: add a line to the table of the command (or a new ``cases("cmd", ...)`` block for
a new command). ``{F}`` in an argument is the folder of input files built by
:func:`make_inputs`, ``{R}`` the repository root; ``env`` entries are set for the case
(placeholders expanded there too); ``setup`` names a function of :data:`SETUPS` run in the
case's working folder first.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.case import Case, cases

# --- input files -----------------------------------------------------------------------------
TRACE_HEAD = "Request Time,Model Name,Input Length,Output Length\n"
INPUTS: dict[str, str] = {
    "bad.toml": "this is [not toml\n",
    "empty.toml": "",
    "fabirc.toml": '[fabirc]\npreset = "hpn"\n',
    "fabric-bad.toml": '[fabric]\npreset = "hpn"\nsegments = "many"\n',
    "fabric-unknown.toml": '[fabric]\npreset = "hpn"\nsegmnets = 2\n',
    "job-missing.toml": '[fabric]\npreset = "hpn"\n',
    "job-bad.toml": (
        '[[job]]\nname = "j"\n[job.model]\nlayers = 0\nhidden = 4096\nheads = 32\n'
        "seq_len = 2048\n[job.parallel]\ntp = 8\npp = 1\ndp = 1\nglobal_batch = 8\n"
    ),
    "header-only.csv": TRACE_HEAD,
    "one.csv": TRACE_HEAD + "00:00:00.000,m,10,10\n",
    "absurd.csv": TRACE_HEAD + "00:00:00.000,m,100000000,10\n",
    "negative.csv": TRACE_HEAD + "00:00:00.000,m,-5,10\n",
    "badtime.csv": TRACE_HEAD + "yesterday,m,10,10\n",
    "columns.csv": TRACE_HEAD + "00:00:00.000,m,10\n",
    "garbage.csv": "\x00\x01\x02 not a trace\n",
    "mix-empty.toml": "",
    "mix-bad.toml": "[[model]]\nname = 7\n",
    "mix-huge.toml": '[[model]]\nmodel = "qwen2.5-7b"\nrate = 100.0\ncount = 100\n',
    "jobs-many.toml": "".join(
        f'[[job]]\nname = "j{i}"\n[job.model]\nlayers = 2\nhidden = 64\nheads = 2\n'
        "seq_len = 64\n[job.parallel]\ntp = 1\npp = 1\ndp = 1\nglobal_batch = 1\n"
        for i in range(17)
    ),
    "job-batches.toml": (
        '[[job]]\nname = "j"\n[job.model]\nlayers = 2\nhidden = 64\nheads = 2\n'
        "seq_len = 64\n[job.parallel]\ntp = 1\npp = 1\ndp = 1\nglobal_batch = 100000\n"
    ),
    "sweep-bad.toml": "command = \n",
    "sweep-unknown-cmd.toml": 'command = "rm -rf"\n',
    "sweep-zip.toml": (
        'command = "topo summary"\n[zip]\n"fabric.segments" = [1, 2]\n"fabric.k" = [4]\n'
    ),
    "sweep-path.toml": 'command = "topo summary"\n[grid]\n"fabric segments" = [1]\n',
    "sweep-empty-grid.toml": 'command = "topo summary"\n[grid]\n"fabric.segments" = []\n',
    "sweep-value.toml": (
        'command = "topo summary"\n[base.fabric]\npreset = "hpn"\n'
        '[grid]\n"fabric.segments" = [1, 2, "lots"]\n'
    ),
    "sweep-key.toml": (
        'command = "topo summary"\n[base.fabric]\npreset = "hpn"\n'
        '[grid]\n"fabric.segmnets" = [1, 2]\n'
    ),
    "sweep-huge.toml": (
        'command = "topo summary"\n[grid]\n'
        + "".join(f'"fabric.x{i}" = [{", ".join(str(v) for v in range(10))}]\n' for i in range(6))
    ),
    "prices-bad.toml": '[switch]\nprice = "free"\n',
    "topo.json": "{not json",
    "topo-empty.json": "",
    "afile": "just a file\n",
    "foreign/notes.txt": "someone's notes\n",
}


def make_inputs(folder: Path) -> Path:
    for name, text in INPUTS.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (folder / "adir").mkdir(exist_ok=True)
    return folder


def _run_at(cwd: Path) -> None:
    from hpn.store import record_run

    record_run("topo summary", {"fabric": {"preset": "hpn"}}, {"gpus": 1}, out=cwd / "myrun")


SETUPS = {"run_at": _run_at}

RO = {"HPN_RUNS_DIR": "{F}/afile"}  # a store that is a file

# Known gaps: a case marked ``known`` is expected to fail (strict xfail: once fixed it fails
# until the mark is removed). Give the reason and whose code it is in. None are open today.

# --- the table ---------------------------------------------------------------------------------
CORPUS: list[Case] = []

CORPUS += cases(
    "topo summary",
    [
        ("--preset nope", ("--preset", "hpn")),
        ("--segments 0", ("segments", "greater than or equal to 1")),
        ("--segments -1", ("segments",)),
        ("--segments 100000", ("segments",)),
        ("--pods 0", ("pods",)),
        ("--pods 100000", ("pods",)),
        ("--chip 7T", ("chip", "51.2T")),
        ("--chip fast", ("chip",)),
        ("--preset fat-tree --k 3", ("k", "even")),
        ("--preset fat-tree --k 0", ("k",)),
        ("--preset fat-tree --speed 7X", ("speed",)),
        ("--set nope=1", ("nope",)),
        ("--set segments", ("--set", "=")),
        ("--set segments=abc", ("segments",)),
        ("--agg-oversubscription 0", ("agg_oversubscription",)),
        ("--agg-oversubscription -1", ("agg_oversubscription",)),
        ("--agg-oversubscription nan", ("agg_oversubscription",)),
        ("--config {F}/missing.toml", ("missing.toml", "no such file")),
        ("--config {F}/adir", ("adir", "not a file")),
        ("--config {F}/bad.toml", ("bad.toml", "TOML")),
        ("--config {F}/fabirc.toml", ("fabirc",)),
        ("--config {F}/fabric-bad.toml", ("segments",)),
        ("--config {F}/fabric-unknown.toml", ("segmnets",)),
        ("--segments abc", ("--segments", "integer")),
        ("--bogus", ("--bogus",)),
        ("--out {F}/afile", ("--out", "afile")),
        ("--out {F}/foreign", ("--out", "not a run folder")),
        ("--out myrun", ("--out", "already holds run"), {"setup": "run_at"}),
        ("", ("HPN_RUNS_DIR", "not a folder"), {"env": RO}),
    ],
)
CORPUS += cases(
    "topo export",
    [
        ("--out x.json --format nope", ("--format", "json")),
        ("--out {F}/missing/x.json", ("--out", "missing")),
        ("--out {F}/adir", ("--out", "adir")),
        ("--out x.json --preset nope", ("--preset",)),
        ("", ("--out",)),
    ],
)
CORPUS += cases(
    "topo import",
    [
        ("{F}/missing.json", ("missing.json", "no such file")),
        ("{F}/topo.json", ("topo.json",)),
        ("{F}/topo-empty.json", ("topo-empty.json",)),
        ("{F}/adir", ("adir",)),
        ("{F}/afile --format nope", ("--format",)),
    ],
)
CORPUS += cases(
    "topo bom",
    [
        ("--prices {F}/missing.toml", ("missing.toml", "no such file")),
        ("--prices {F}/bad.toml", ("bad.toml",)),
        ("--prices {F}/prices-bad.toml", ("price",)),
        ("--preset nope", ("--preset",)),
    ],
)
CORPUS += cases(
    "topo draw",
    [
        ("--out {F}/missing/x.png", ("--out", "missing")),
        ("--out {F}/adir", ("--out", "adir")),
        ("--out x.bmpx", ("--out", ".png")),
        ("--segment 99", ("segment", "no segment 99")),
        ("--segment -1", ("segment",)),
        ("--pod 5", ("pod", "no pod 5")),
    ],
)
CORPUS += cases(
    "traffic",
    [
        ("--pattern nope", ("pattern", "permutation")),
        ("--size 0", ("size",)),
        ("--size -1MB", ("--size",)),
        ("--size 1000000PB", ("--size", "1TiB")),
        ("--size 2TiB --segments 1", ("--size", "flow size")),
        ("--size abc", ("--size",)),
        ("--seed -1", ("seed", ">= 0|greater than or equal to 0")),
        ("--seed 99999999999999999999999", ("seed",)),
        ("--endpoints 0", ("endpoints", ">= 2|greater than or equal to 2")),
        ("--endpoints 1", ("endpoints", ">= 2|greater than or equal to 2")),
        ("--routing nope", ("routing", "ecmp")),
        ("--pods 100", ("pods",)),
        ("--out {F}/afile", ("--out", "afile")),
        ("--out {F}/foreign", ("--out", "not a run folder")),
        ("--out myrun", ("--out", "already holds run"), {"setup": "run_at"}),
        ("", ("HPN_RUNS_DIR", "not a folder"), {"env": RO}),
        ("--preset nope", ("--preset",)),
    ],
)
CORPUS += cases(
    "collective",
    [
        ("--op nope", ("op", "allreduce")),
        ("--gpus 0", ("gpus", "positive multiple")),
        ("--gpus 1", ("gpus", "positive multiple")),
        ("--gpus 100000000", ("gpus",)),
        ("--sizes abc", ("--sizes",)),
        ("--sizes 0", ("sizes",)),
        ("--sizes ,", ("--sizes",)),
        ("--sizes 2TiB", ("--sizes", "1TiB")),
        (("--sizes", ",".join(f"{k}K" for k in range(1, 66))), ("--sizes", "64")),
        ("--jobs 100", ("--jobs", "64")),
        ("--algo nope", ("algo", "ring")),
        ("--algo collnetdirect", ("algo", "in-network reduction")),
        ("--algo nvls --gpu A100", ("algo", "NVLink SHARP")),
        ("--proto ll64", ("proto", "ll64")),
        ("--gpu V1", ("gpu", "H800")),
        ("--channels 65", ("channels", "<= 64|less than or equal to 64")),
        ("--sizes 1K:2TiB:2", ("--sizes", "1TiB")),
        ("--sizes 1M:4M:1", ("--sizes", "FACTOR")),
        ("--conns 0", ("conns", ">= 1|greater than or equal to 1")),
        ("--channels 0", ("channels", ">= 1|greater than or equal to 1")),
        ("--alpha -1us", ("alpha", ">= 0|greater than or equal to 0")),
        ("--jobs 0", ("jobs", ">= 1|greater than or equal to 1")),
        ("--per-host 0", ("per_host", "1..8")),
        ("--seed -1", ("seed",)),
        ("--out {F}/afile", ("--out",)),
    ],
)
CORPUS += cases(
    "train",
    [
        ("{F}/missing.toml", ("missing.toml", "no such file")),
        ("{F}/bad.toml", ("bad.toml", "TOML")),
        ("{F}/job-missing.toml", ("job",)),
        ("{F}/job-bad.toml", ("layers",)),
        ("{F}/empty.toml", ("job",)),
        ("{F}/adir", ("adir",)),
        ("{F}/jobs-many.toml", ("job", "16")),
        ("{F}/job-batches.toml", ("global_batch", "micro-batches", "4,096")),
        ("{R}/examples/train/llama-7b-448.toml --seed -1", ("seed",)),
        ("{R}/examples/train/llama-7b-448.toml --routing nope", ("routing", "ecmp")),
    ],
)
LLAMA = "{R}/examples/failures/llama-7b-256.toml"
FAULT = ("--fault", "link:host=1,nic=0,port=0,at=1s,repair=5s")
CORPUS += cases(
    "fail",
    [
        ("{F}/missing.toml", ("missing.toml", "no such file")),
        ("{F}/bad.toml", ("bad.toml",)),
        ((LLAMA, "--fault", "nonsense"), ("--fault",)),
        ((LLAMA, "--fault", "link:host=999999,nic=0,at=0s"), ("host",)),
        ((LLAMA, "--fault", "link:host=1,nic=0,at=-1s"), ("at",)),
        ((LLAMA, "--fault", "link:host=1,nic=99,at=1s"), ("nic",)),
        (
            (LLAMA, "--fault", "flap:host=1,nic=0,at=1s,down=1s,count=10000,every=2s"),
            ("--fault", "count", "256", "--allow-large"),
        ),
        ((LLAMA, "--fault", "link:host=1,nic=0,at=100000h"), ("--fault", "at", "24h")),
        ((LLAMA, "--fault", "link:host=1,nic=0,at=1s,repair=100000h"), ("--fault", "repair")),
        ((LLAMA, *FAULT, "--duration", "1000h"), ("--duration", "24h")),
        (
            (LLAMA, *FAULT, "--duration", "1000h", "--allow-large"),
            ("--duration", "720h"),
        ),
        ((LLAMA, *[a for i in range(65) for a in FAULT]), ("--fault", "64")),
        ((LLAMA, *FAULT, "--timeout", "-1s"), ("timeout", ">= 0|greater than or equal to 0")),
        ((LLAMA, *FAULT, "--timeout", "abc"), ("timeout", "duration")),
        ((LLAMA, *FAULT, "--duration", "0s"), ("duration",)),
        ((LLAMA, *FAULT, "--single-tor", "--stacked"), ("--stacked",)),
        ((LLAMA, *FAULT, "--checkpoint-interval", "0s"), ("checkpoint_interval",)),
        ((LLAMA, *FAULT, "--seed", "-1"), ("seed",)),
        ((LLAMA, *FAULT, "--out", "{F}/afile"), ("--out",)),
    ],
)
CORPUS += cases(
    "reliability",
    [
        ("--gpus 0", ("gpus", "greater than or equal to 1")),
        ("--gpus 100000000", ("gpus",)),
        ("--months 0", ("months",)),
        ("--months 100000", ("months",)),
        ("--trials 0", ("trials",)),
        ("--trials 1000000000", ("trials",)),
        ("--trials 200000", ("--trials", "100,000", "--allow-large")),
        ("--months 1000", ("--months", "120")),
        ("--seed -1", ("seed",)),
        ("--link-rate -1", ("link_rate",)),
        ("--repair-sigma -1", ("repair_sigma",)),
        ("--flap-down abc", ("flap_down", "duration")),
        ("--stacked-pair 2", ("stacked_pair", "less than or equal to 1")),
        ("", ("HPN_RUNS_DIR",), {"env": RO}),
    ],
)
SIM = "--models 4 --duration 30s --gpus 8"
CORPUS += cases(
    "pool simulate",
    [
        (f"{SIM} --policy nope", ("policy", "aegaeon")),
        ("--models 0", ("models", ">= 1|greater than or equal to 1")),
        ("--models 1000000000 --gpus 8", ("--models", "1,000", "--allow-large")),
        ("--models 4 --duration 30s --gpus 1000000000", ("--gpus", "4,096")),
        ("--models 4 --duration 30s --gpus 0", ("gpus", "at least 2")),
        (
            "--models 4 --duration 30s --gpus 16 --prefill-gpus 6 --decode-gpus 4",
            ("gpus", "prefill"),
        ),
        (f"{SIM} --rate 0", ("rate", "> 0|greater than 0")),
        (f"{SIM} --rate -1", ("rate", "> 0|greater than 0")),
        (f"{SIM} --rate abc", ("--rate",)),
        ("--models 4 --duration 0s --gpus 8", ("duration", "> 0|greater than 0")),
        ("--models 4 --duration 1000000h --gpus 8", ("duration", "24h")),
        (f"{SIM} --gpu nope", ("gpu", "h800")),
        (f"{SIM} --ttft-slo 0s", ("ttft",)),
        (f"{SIM} --tbt-slo -1ms", ("tbt-slo", ">= 0|greater than or equal to 0")),
        (f"{SIM} --switch nope", ("switch", "optimized")),
        (f"{SIM} --seed -1", ("seed",)),
        (f"{SIM} --zipf -1", ("zipf",)),
        (f"{SIM} --cv 0", ("cv", "> 0|greater than 0")),
        ("--trace {F}/missing.csv", ("missing.csv", "no such file")),
        ("--trace {F}/header-only.csv", ("header-only.csv", "no requests")),
        ("--trace {F}/absurd.csv", ("absurd.csv:2", "Input Length")),
        ("--trace {F}/negative.csv", ("negative.csv:2", "Input Length")),
        ("--trace {F}/badtime.csv", ("badtime.csv:2", "Request Time")),
        ("--trace {F}/columns.csv", ("columns.csv:2", "4 columns")),
        ("--trace {F}/garbage.csv", ("garbage.csv",)),
        ("--trace {F}/header-only.csv --models 3", ("--trace", "--models")),
        ("--policy nope", ("policy",)),
        ("--rate 0", ("rate",)),
        ("--gpu nope", ("gpu",)),
        ("--ttft-slo 0s", ("ttft",)),
        ("--models 1000 --rate 1 --duration 24h --gpus 8", ("--duration", "requests")),
        ("--models 200000 --gpus 8 --allow-large", ("--models", "100,000")),
        ("", ("--trace", "--models")),
        (f"{SIM} --out {{F}}/afile", ("--out",)),
        (SIM, ("HPN_RUNS_DIR",), {"env": RO}),
    ],
)
CORPUS += cases(
    "pool goodput",
    [
        ("--gpus 8 --policy nope", ("policy", "aegaeon")),
        ("--gpus 8 --rate 0", ("rate", "> 0|greater than 0")),
        ("--gpus 8 --rate -1", ("rate", "> 0|greater than 0")),
        ("--gpus 0", ("gpus", "at least 2")),
        ("--gpus 1000000000", ("--gpus", "4,096")),
        ("--gpus 8 --duration 1000000h", ("duration", "24h")),
        ("--gpus 8 --duration 0s", ("duration", "> 0|greater than 0")),
        ("--gpus 8 --metric nope", ("metric", "deadline")),
        ("--gpus 8 --gpu nope", ("gpu", "h800")),
        ("--gpus 8 --seed -1", ("seed",)),
        ("--gpus 8 --rate 10 --duration 24h", ("--duration", "requests")),
    ],
)
CORPUS += cases(
    "pool capacity",
    [
        ("--mix {F}/missing.toml", ("missing.toml",)),
        ("--mix {F}/mix-empty.toml", ("mix-empty.toml", "no model")),
        ("--mix {F}/mix-bad.toml", ("mix-bad.toml",)),
        ("--mix {F}/mix-huge.toml --duration 24h", ("--duration", "requests")),
        ("--mix {F}/bad.toml", ("bad.toml",)),
        ("--mix nope", ("nope", "no such file")),
        ("--duration 1000000h", ("duration", "24h")),
        ("--duration 0s", ("duration", "> 0|greater than 0")),
        ("--policy nope", ("policy", "aegaeon")),
        ("--metric nope", ("metric", "deadline")),
        ("--gpu nope", ("gpu", "h20")),
    ],
)
CORPUS += cases("pool policies", [("extra", ("extra",))])
CORPUS += cases(
    "pool simulate",
    [
        ("--models 2 --gpus 2 --policy aegaeon --target 2", ("--target", "serverless")),
        ("--models 2 --gpus 2 --policy serverless --keep-alive forever", ("keep-alive",)),
        ("--models 2 --gpus 2 --policy serverless --tier tape", ("tier", "dram")),
        ("--models 2 --gpus 2 --policy muxserve --kv-fraction 1", ("kv_fraction",)),
    ],
)
CORPUS += cases(
    "pool validate",
    [
        ("{F}/adir", ("folder", "no Aegaeon workload CSV")),
        ("{F}/nope", ("folder", "not a folder")),
        ("{F}/afile", ("folder", "not a folder")),
        ("{F} --workers 0", ("--workers",)),
        ("{F} --gpus 1", ("--gpus",)),
        ("{F} --workload replay", ("workload", "simulator")),
        ("{F} --policy vllm", ("policy", "choose from")),
        ("{F} --reference {F}/bad.toml", ("bad.toml", "file,policy,attainment")),
        ("{F} --reference {F}/nope.csv", ("reference", "no such file")),
        ("{F} --policy aegaeon", ("absurd.csv",)),
    ],
)
CORPUS += cases(
    "route paths",
    [("--preset nope", ("--preset",)), ("--segments 0", ("segments",))],
)
CORPUS += cases(
    "route select",
    [
        ("--src 0:0", ("--dst",)),
        ("--src x --dst 1:0", ("--src", "HOST:NIC")),
        ("--src 0:0 --dst 99999:0", ("--dst",)),
        ("--src 0:0 --dst 1:99", ("--dst",)),
        ("--src 0:0 --dst 1:0 --connections 0", ("--connections",)),
        ("--src 0:0 --dst 1:0 --hash nope", ("hash", "crc32")),
        ("--src 0:0 --dst 1:0 --seeds nope", ("seeds", "same")),
        ("--src 0:0 --dst 1:0 --bond nope", ("bond", "l34")),
    ],
)
CORPUS += cases(
    "route polarization",
    [
        ("--segments 1", ("segments",)),
        ("--hosts 0", ("--hosts",)),
        ("--senders 0", ("--senders",)),
        ("--connections 0", ("connections", ">= 1|greater than or equal to 1")),
        ("--hash nope", ("hash", "crc32")),
        ("--routing nope", ("routing", "ecmp")),
        ("--seed -1", ("seed",)),
    ],
)
CORPUS += cases(
    "runs list",
    [
        ("--limit -5", ("--limit",)),
        ("--limit abc", ("--limit",)),
        ("", ("HPN_RUNS_DIR",), {"env": RO}),
    ],
)
CORPUS += cases("runs reindex", [("", ("HPN_RUNS_DIR", "not a folder"), {"env": RO})])
CORPUS += cases(
    "runs show",
    [("nope", ("RUN", "no run")), ("", ("RUN",))],
)
CORPUS += cases(
    "runs compare",
    [("one", ("RUNS", "two")), ("nope1 nope2", ("RUN", "no run"))],
)
CORPUS += cases(
    "runs query",
    [
        (("copy (select 1) to 'out.csv'",), ("SQL", "only SELECT")),
        (("attach 'x.db'",), ("SQL", "only SELECT")),
        (("install httpfs",), ("SQL", "only SELECT")),
        (("select 1; select 2",), ("SQL", "one SELECT")),
        (("select * from read_csv('/etc/passwd')",), ("SQL",)),
        (("select frm where",), ("SQL",)),
    ],
)
CORPUS += cases(
    "sweep",
    [
        ("{F}/missing.toml", ("missing.toml", "no such file")),
        ("{F}/bad.toml", ("bad.toml",)),
        ("{F}/sweep-bad.toml", ("sweep-bad.toml",)),
        ("{F}/sweep-unknown-cmd.toml", ("command", "unknown command")),
        ("{F}/sweep-zip.toml", ("zip", "equal lengths")),
        ("{F}/sweep-path.toml", ("grid", "dotted")),
        ("{F}/sweep-empty-grid.toml", ("grid", "no values")),
        ("{F}/sweep-value.toml", ("segments", "lots")),
        ("{F}/sweep-key.toml", ("segmnets",)),
        ("{F}/sweep-huge.toml", ("sweep", "points")),
        ("{F}/sweep-key.toml --workers 0", ("--workers",)),
        ("{F}/sweep-key.toml --dask http://x", ("--dask",)),
    ],
)
CORPUS += cases(
    "plot",
    [
        ("nope", ("RUN", "no run")),
        ("myrun --kind nope", ("--kind",), {"setup": "run_at"}),
        ("myrun --format nope", ("--format",), {"setup": "run_at"}),
        ("myrun --kind xy", ("--x",), {"setup": "run_at"}),
    ],
)
CORPUS += cases(
    "dash",
    [("--port 0", ("--port", "1..65535")), ("--port 70000", ("--port",))],
)
CORPUS += cases(
    "demo",
    [("--out {F}/afile", ("--out",))],
)
CORPUS += cases(
    "reproduce",
    [
        ("nope", ("paper", "hpn, aegaeon or all")),
        ("--only nope", ("--only", "unknown claim")),
        ("--only ,", ("--only", "one or more claim ids")),
        ("--out {F}/afile", ("--out", "file")),
    ],
)
# the lab (tests/lab): every case is refused before anything is built or written
CORPUS += cases(
    "lab up",
    [
        ("--hosts-per-segment 0", ("hosts_per_segment|--hosts-per-segment",)),
        ("--rate-scale 1", ("rate_scale|--rate-scale",)),
        ("--control ospf", ("control|--control",)),
        ("--name BAD", ("name",)),
        ("--preset dcn-plus", ("preset", "hpn, rail-only or fat-tree")),
        ("--segments 8 --hosts-per-segment 32 --rails 8", ("lab", "namespaces")),
    ],
)
CORPUS += cases("lab status", [("--name BAD", ("name",))])
CORPUS += cases("lab down", [("--name toolong", ("name",))])
CORPUS += cases(
    "lab traffic",
    [
        ("--name zz9", ("lab", "no lab")),
        ("--payload 10", ("payload|--payload",)),
        ("--connections 0", ("connections|--connections",)),
        ("--routing ideal", ("routing|--routing",)),
    ],
)
CORPUS += cases(
    "lab fail",
    [
        ("--name zz9", ("lab", "no lab")),
        ("--repair 100", ("repair|--repair",)),
        ("--probe 0", ("probe|--probe",)),
    ],
)
CORPUS += cases(
    "lab configs",
    [
        ("--out {F}/afile", ("out", "not a directory")),
        ("--aggs-per-plane 0", ("aggs_per_plane|--aggs-per-plane",)),
    ],
)
CORPUS += cases(
    "lab up",
    [
        ("--preset nope", ("--preset", "hpn")),
        ("--segments 0", ("segments",)),
        ("--name X!", ("name",)),
    ],
)
CORPUS += cases("lab down", [("--name X!", ("name",)), ("--name toolong", ("name",))])
CORPUS += cases("lab status", [("--name X!", ("name",))])
CORPUS += cases(
    "lab fail",
    [("--name X!", ("name",)), ("--connections 0", ("connections",)), ("--repair -1", ("repair",))],
)
CORPUS += cases(
    "lab traffic",
    [
        ("--name X!", ("name",)),
        ("--connections 0", ("connections",)),
        ("--size 0", ("size",)),
    ],
)
CORPUS += cases("lab configs", [("--preset nope", ("--preset",)), ("--segments 0", ("segments",))])
CORPUS += cases("lab repair", [("--name zz9", ("lab", "no lab")), ("--name X!", ("name",))])
CORPUS += cases(
    "lab exec",
    [
        ("--name zz9 --node t0 --command ls", ("lab", "no lab")),
        ("--command ls", ("node", "required")),
        ("--node t0 --command ls --timeout 999", ("timeout",)),
    ],
)
CORPUS += cases(
    "lab vtysh",
    [("--name zz9 --node t0", ("lab", "no lab")), ("--command x", ("node", "required"))],
)
CORPUS += cases(
    "lab capture",
    [
        ("--name zz9 --link t0:x --out {F}/c.pcap", ("lab", "no lab")),
        ("--link t0:x --out {F}/c.pcap --seconds 100", ("seconds",)),
        ("--link t0:x --out {F}/c.pcap --packets 0", ("packets",)),
    ],
)
CORPUS += cases(
    "lab export",
    [
        ("--format gns3 --out {F}/ex", ("format",)),
        ("--out {F}/afile", ("out", "not a directory")),
        ("--segments 0 --out {F}/ex", ("segments",)),
    ],
)
CORPUS += cases(
    "pool validate",
    [
        ("{F}/missing", ("missing",)),
        ("{F}/afile", ("afile", "not a folder")),
        ("{F}/adir", ("adir", "no Aegaeon workload CSV")),
        ("{F}/adir --workers 0", ("workers",)),
        ("{F}/adir --gpus 0", ("gpus",)),
    ],
)
for _cmd in ("pool replay", "serve make-models", "serve profile", "serve start"):
    CORPUS += cases(_cmd, [("--bogus", ("--bogus", "no such option"))])
ONE = "{F}/one.csv"  # a valid one-request trace: the checks after the trace's are reached
CORPUS += cases(
    "pool replay",
    [
        ("", ("TRACE", "missing")),
        ("{F}/missing.csv", ("missing.csv", "no such file")),
        ("{F}/header-only.csv", ("header-only.csv", "no requests")),
        ("{F}/afile", ("afile", "trace format")),
        ("{F}/absurd.csv", ("absurd.csv:2", "Input Length")),
        (f"{ONE} --url ftp://x", ("--url", "http://")),
        (f"{ONE} --url notaurl", ("--url", "http://")),
        (f"{ONE} --map a", ("map", "TRACE_MODEL=SERVED_MODEL")),
        (f"{ONE} --time-scale 0", ("--time-scale", "greater than 0")),
        (f"{ONE} --seed -1", ("--seed",)),
        (f"{ONE} --ttft-slo 0s", ("--ttft-slo", "> 0")),
        (f"{ONE} --tbt-slo abc", ("--tbt-slo", "duration")),
        (f"{ONE} --max-input 0", ("--max-input",)),
        (f"{ONE} --trace-models 0", ("--trace-models",)),
    ],
)
CORPUS += cases(
    "serve make-models",
    [
        ("", ("DIR", "missing")),
        ("{F}/afile", ("dir", "is a file")),
        ("{F}/afile/sub", ("dir", "afile")),
        ("m --count 0", ("--count",)),
        ("m --count 100000", ("--count", "256")),
        ("m --sizes 10t", ("sizes", "10t")),
        ("m --max-len 10", ("--max-len", "64")),
        ("m --seed -1", ("--seed",)),
    ],
)
CORPUS += cases(
    "serve profile",
    [
        ("", ("--models", "required")),
        ("--models {F}/nope", ("models", "not a folder")),
        ("--models {F}/afile", ("models", "not a folder")),
        ("--models {F}/adir", ("models", "no checkpoints")),
        ("--models {F}/adir --concurrent 0", ("--concurrent",)),
        ("--models {F}/adir --threads 0", ("--threads",)),
    ],
)
CORPUS += cases(
    "serve start",
    [
        ("", ("--models", "required")),
        ("--models {F}/nope", ("models", "not a folder")),
        ("--models {F}/adir", ("models", "no checkpoints")),
        ("--models {F}/adir --port 0", ("--port", "1")),
        ("--models {F}/adir --port 70000", ("--port", "65535")),
        ("--models {F}/adir --port abc", ("--port", "integer")),
        ("--models {F}/adir --policy nope", ("policy", "aegaeon")),
        ("--models {F}/adir --prefill 100", ("--prefill", "64")),
        ("--models {F}/adir --workers -1", ("--workers",)),
    ],
)
CORPUS += cases(
    "runs gc", [("extra", ("extra",)), ("", ("HPN_RUNS_DIR", "not a folder"), {"env": RO})]
)

# a new user's odd input (review, stop 32): each failed on the previous main (a traceback, a run
# that computed for minutes, a run written into the working folder, a duplicate taken silently)
INPUTS["hour.csv"] = TRACE_HEAD + "00:00:00.000,m,10,10\n01:00:00.000,m,10,10\n"
CORPUS += cases(
    "pool replay",
    [
        (f"{ONE} --duration 0s", ("--duration", "> 0")),
        (f"{ONE} --map a=b,a=c", ("--map", "'a' mapped twice")),
        ("{F}/hour.csv --time-scale 25", ("--time-scale", "replay time", "24h")),
    ],
)
CORPUS += cases(
    "pool simulate",
    [
        (f"{SIM} --cv 1e30", ("cv", "<= 10|less than or equal to 10")),
        ("--trace {F}/one.csv --trace-models 0", ("trace_models", ">= 1|greater than or equal")),
    ],
)
CORPUS += cases(
    "topo summary",
    [
        ("--set segments=2 --set segments=3", ("--set", "'segments' given twice")),
        (("--preset", ""), ("--preset", "unknown preset ''")),
        (("--out", ""), ("--out", "empty string")),
    ],
)
CORPUS += cases(
    "traffic",
    [
        ("--size 1", ("--size", ">= 64 bytes")),
        ("--size 1e-30", ("--size", ">= 64 bytes")),
        ("--write-matrix {F}/adir", ("--write-matrix", "directory")),
        (("--out", ""), ("--out", "empty string")),
    ],
)
CORPUS += cases("topo export", [("--out x.json --gpu-type V100", ("--gpu-type", "H800"))])
CORPUS += cases("collective", [("--sizes 1M,2M,1M", ("--sizes", "1MiB given twice"))])
CORPUS += cases(
    "fail",
    [
        ((LLAMA, *FAULT, "--probe", "1e9h"), ("--probe", "<= 1h")),
        ((LLAMA, *FAULT, "--probe", "0s"), ("--probe", "> 0|greater than 0")),
        ((LLAMA, *FAULT, "--path-search", "2h"), ("--path-search", "<= 1h")),
    ],
)
CORPUS += cases(
    "reliability",
    [
        ("--flaps-per-day 1e30", ("flaps_per_day", "10000000")),
        ("--link-rate 1e30", ("link_rate", "less than or equal to 1")),
        ("--link-rate 1 --trials 100000", ("failures drawn", "link", "--allow-large")),
    ],
)
CORPUS += cases("lab configs", [(("--out", ""), ("out", "at least 1 character"))])
CORPUS += cases("lab export", [(("--out", ""), ("out", "at least 1 character"))])
CORPUS += cases("demo", [(("--out", ""), ("--out", "empty string"))])
CORPUS += cases("reproduce", [(("--out", ""), ("--out", "empty string"))])

# absurd durations, sizes and rates, and a repeated claim id (issues 25, 26, 29): each ran (and
# recorded a run) on the previous main; now refused by its field, naming the bound in units
SERVERLESS = f"{SIM} --policy serverless"
for _cmd, _pre in (("pool simulate", SIM), ("pool goodput", "--gpus 8"), ("pool capacity", "")):
    CORPUS += cases(
        _cmd,
        [
            (f"{_pre} --ttft-slo 1e9h", ("--ttft-slo", "<= 1h")),
            (f"{_pre} --tbt-slo 2h", ("--tbt-slo", "<= 1h")),
            (f"{_pre} --tbt-slo 0s", ("--tbt-slo", "> 0")),
        ],
    )
CORPUS += cases(
    "pool simulate",
    [
        (f"{SERVERLESS} --keep-alive 1e9h", ("--keep-alive", "<= 24h")),
        (f"{SERVERLESS} --startup 1e9h", ("--startup", "<= 1h")),
        (f"{SERVERLESS} --interval 1e9h", ("--interval", "<= 1h")),
        (f"{SERVERLESS} --interval 0s", ("--interval", "> 0")),
        (f"{SERVERLESS} --store-ssd-gbps 1e9", ("--store-ssd-gbps", "1000")),
        (f"{SIM} --q-max 1e9", ("--q-max", "3600")),
        (f"{SIM} --policy muxserve --overhead-gb 1e9", ("--overhead-gb", "1000")),
        # issue 29: no upper bound before (a 1e9 h timeout, an exponent of 1e9 ran)
        (f"{SIM} --policy serverless-artifact --start-timeout 1e9h", ("--start-timeout", "<= 1h")),
        (f"{SIM} --policy serverless-artifact --start-timeout 0s", ("--start-timeout", "> 0")),
        (f"{SIM} --zipf 1e9", ("--zipf", "less than or equal to 20")),
        (f"{SIM} --zipf inf", ("--zipf", "finite")),
    ],
)
CORPUS += cases("pool goodput", [("--gpus 8 --startup 2h", ("--startup", "<= 1h"))])
CORPUS += cases(
    "pool goodput",
    [("--gpus 8 --policy serverless-artifact --start-timeout 2h", ("--start-timeout", "<= 1h"))],
)
CORPUS += cases("pool capacity", [("--keep-alive 2d", ("--keep-alive", "<= 24h"))])
CORPUS += cases("pool validate", [("{F} --ttft-slo 1e9h", ("--ttft-slo", "<= 1h"))])
CORPUS += cases(
    "pool replay",
    [
        (f"{ONE} --ttft-slo 1e9h", ("--ttft-slo", "<= 1h")),
        (f"{ONE} --tbt-slo 1e9h", ("--tbt-slo", "<= 1h")),
        (f"{ONE} --duration 1e9h", ("--duration", "<= 24h")),
    ],
)
ADIR = "--models {F}/adir"
CORPUS += cases(
    "serve start",
    [
        (f"{ADIR} --startup 1e9h", ("--startup", "<= 1h")),
        (f"{ADIR} --startup -1s", ("--startup", ">= 0")),
        (f"{ADIR} --ttft-slo 1e9h", ("--ttft-slo", "<= 1h")),
        (f"{ADIR} --tbt-slo 0s", ("--tbt-slo", "> 0")),
        (f"{ADIR} --link 1e30", ("--link", "1e+12|1000000000000")),
        (f"{ADIR} --memory 1000000000000000", ("--memory", "1099511627776")),
    ],
)
CORPUS += cases("serve profile", [(f"{ADIR} --link 1e30", ("--link", "1000000000000"))])
CORPUS += cases(
    "collective",
    [("--alpha 1e9h", ("--alpha", "<= 1s")), ("--alpha 2s", ("--alpha", "<= 1s"))],
)
CORPUS += cases(
    "fail",
    [
        ((LLAMA, *FAULT, "--timeout", "1e9h"), ("--timeout", "<= 24h")),
        ((LLAMA, *FAULT, "--checkpoint-interval", "1e9h"), ("--checkpoint-interval", "<= 720h")),
        ((LLAMA, *FAULT, "--checkpoint-cost", "2d"), ("--checkpoint-cost", "<= 24h")),
        ((LLAMA, *FAULT, "--restart", "1e9h"), ("--restart", "<= 24h")),
    ],
)
CORPUS += cases(
    "reliability",
    [
        ("--flap-down 1e9h", ("--flap-down", "<= 24h")),
        ("--link-repair 1e9h", ("--link-repair", "<= 720h")),
        ("--tor-repair 1e9h", ("--tor-repair", "<= 720h")),
        ("--fleet-links 1e-300", ("--fleet-links", "greater than or equal to 1")),  # a traceback
    ],
)
CORPUS += cases(
    "lab traffic",
    [
        ("--size 1e30", ("--size", "<= 1GiB")),
        ("--rate 1e30bps", ("--rate", "<= 10G")),
        ("--size 1GB --rate 1Mbps", ("--size", "send time", "10min")),
    ],
)
CORPUS += cases("lab fail", [("--rate 1Tbps", ("--rate", "<= 10G"))])
CORPUS += cases(
    "reproduce",
    [
        ("--only hpn.tab2.tier1,hpn.tab2.tier1", ("--only", "'hpn.tab2.tier1' given twice")),
        ("--only a*,a*", ("--only", "'a*' given twice")),
    ],
)

# the operating system, the store, numbers and file limits (issue 28): tests/cli/corpus_system.py
from tests.cli import corpus_system as _system  # noqa: E402

INPUTS.update(_system.INPUTS)
SETUPS.update(_system.SETUPS)
CORPUS += _system.CASES
_make_plain = make_inputs


def make_inputs(folder: Path) -> Path:  # noqa: F811 - the plain files, then the system table's
    _make_plain(folder)
    _system.make_inputs(folder)
    return folder
