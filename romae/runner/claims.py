"""The paper's claims judged on their own words: `romae/compendium/reference/claims.csv` says what each claim
asserts, against what it is judged (`against`), how a difference reads (`judge`), its unit of coverage, its evidence
cells and, where the claim itself compares two numbers, that comparison (`compares`).

A claim's evidence is a list of cells `experiment|setting pattern|metric` (judged against the cell's reference in
paper_values.csv) or `experiment|setting pattern|metric|peer model` (against that peer's published number in
peer_values.csv), each read from our best-profile row by `romae.runner.judge`.

**Like for like.** A comparison is judged only in one unit and one protocol. A cell against a peer counts only when
our row follows the peer's protocol (`peer_protocols.csv`: same, differs, unknown; every peer compared is listed);
otherwise it reads *not comparable* with the reason. Where the claim's own comparison is not like for like
(`compares`: a per-sequence sum against a per-element MSE), the cell that checks the paper's number in the paper's
unit says only whether that number is reproduced; the claim is judged on the like-for-like cells.

A cell reads **for** (matches, within tolerance or better than its reference; a claim in words that holds),
**at ceiling** (for, but a trivial predictor or a standard baseline run beside ours reaches the reference too:
`judge.ceiling`), **against** (worse than a comparator the claim says it beats), **not reproduced** (our number
differs from the paper's: for a claim judged on the paper's own numbers, `judge` = numbers, a row worse than the
paper), **untested** (not run, a gate failed, not resolved, a reduced run),
**device** (measured on another device class) or **protocol** (the peer's protocol differs or is unknown).
The claim's outcome (`outcome`), from its like-for-like cells:

- **confirmed**: every cell for;
- **partially confirmed**: some for, the others at ceiling, against, not reproduced or untested (each named);
- **contradicted**: some against, none for;
- **not reproduced**: some not reproduced, none for or against;
- **insufficient evidence (k of n tested)**: cells tested, none discriminating (at ceiling), the rest untested;
- **not comparable**: every cell on another device class or in another (or unknown) protocol;
- **not tested at this scale**: nothing judged.

The runner's: no kernel imports this module, so the rules can change without staling an artefact.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from fnmatch import fnmatchcase
from pathlib import Path

import pandas as pd

from ..compendium.reference import _peer_rows, artefacts, paper_values
from ..compendium.report import PROFILE_RANK, RESULT_COLUMNS, ROOT, derived_rows, reports_path
from ..compendium.verdicts import _parse, qualifiers, scale as scale_fields
from . import judge
from .plantables import planned_hours, planned_total

CLAIMS = Path(__file__).resolve().parents[1] / "compendium" / "reference" / "claims.csv"
PROTOCOLS = CLAIMS.with_name("peer_protocols.csv")
OUTCOMES = ("confirmed", "partially confirmed", "not reproduced", "contradicted", "insufficient evidence",
            "not tested at this scale", "not comparable")
SUPPORTS = ("matches", "within tolerance", "better than", "claim holds")
AGAINST = ("worse than", "does not hold", "differs")
UNTESTED = ("not tested", "not comparable", "not run", "no paper value", "not resolved", "training flagged")
JUDGED = ("for", "against", "not reproduced")
TESTED = JUDGED + ("ceiling",)  # a cell with a judged row
CEILING = "at ceiling"  # a status prefix: for, but not discriminating (`judge.ceiling`)


def claims() -> list[dict]:
    """The rows of claims.csv: claim, title, statement, asserts, against, judge (numbers | direction), unit,
    evidence [(experiment, setting pattern, metric, peer or '')], compares, notebooks [NN]."""
    with open(CLAIMS, newline="") as f:
        out = []
        for row in csv.DictReader(f):
            evidence = []
            for item in (e for e in row["evidence"].split(";") if e.strip()):
                parts = item.split("|")
                if len(parts) not in (3, 4):
                    raise ValueError(f"{CLAIMS.name}: claim {row['claim']}: evidence {item!r} must be "
                                     "experiment|setting|metric or experiment|setting|metric|peer model")
                evidence.append(tuple(parts) + ("",) * (4 - len(parts)))
            if row["judge"] not in ("numbers", "direction"):
                raise ValueError(f"{CLAIMS.name}: claim {row['claim']}: judge must be numbers or direction, "
                                 f"got {row['judge']!r}")
            out.append(dict(row, evidence=evidence, notebooks=row["notebooks"].split()))
        return out


def reading(status: str, judged_on: str = "direction") -> str:
    """How a row's verdict counts for a claim: 'for', 'against', 'not reproduced', 'untested' or 'device'. For a
    claim judged on the paper's own numbers (`judged_on` = 'numbers'), a row against the paper is 'not reproduced'
    (our number differs) rather than evidence against the claim's conclusion."""
    s = str(status or "").lower()
    if s.startswith(CEILING):
        return "ceiling"
    if s.startswith("not comparable: protocol"):
        return "protocol"
    if s.startswith("not comparable") and "other device" in s:
        return "device"
    if s.startswith("not reproduced"):
        return "not reproduced"
    if s.startswith(UNTESTED):
        return "untested"
    if any(w in s for w in AGAINST):
        return "not reproduced" if judged_on == "numbers" else "against"
    if any(w in s for w in SUPPORTS):
        return "for"
    return "untested"


def outcome(readings: list[str], mismatch: str = "", own: list[str] = ()) -> str:
    """A claim's outcome from its like-for-like cells' `readings` (see the module docstring). `mismatch`: why the
    claim's own comparison is not like for like ('' when it is); `own`: the readings of the cells that check the
    paper's number in its own unit, which decide only when no like-for-like cell exists."""
    n = {r: readings.count(r) for r in ("for", "ceiling", "against", "not reproduced", "untested", "device",
                                        "protocol")}
    if mismatch and not readings:
        return "not reproduced" if any(r in JUDGED for r in own) else "not tested at this scale"
    if n["for"] and n["for"] == len(readings):
        return "confirmed"
    if n["for"]:
        return "partially confirmed"
    if n["against"]:
        return "contradicted"
    if n["not reproduced"]:
        return "not reproduced"
    if n["ceiling"]:
        return "insufficient evidence"
    if readings and n["device"] + n["protocol"] == len(readings):
        return "not comparable"
    return "not tested at this scale"


@functools.lru_cache(maxsize=1)
def protocols() -> dict[tuple[str, str, str], tuple[str, str]]:
    """{(experiment, our setting, peer model): (same | differs | unknown, why)} from peer_protocols.csv."""
    with open(PROTOCOLS, newline="") as f:
        out = {}
        for row in csv.DictReader(f):
            if row["protocol"] not in ("same", "differs", "unknown"):
                raise ValueError(f"{PROTOCOLS.name}: {row['experiment']} / {row['setting']} / {row['model']}: "
                                 f"protocol must be same, differs or unknown, got {row['protocol']!r}")
            out[row["experiment"], row["setting"], row["model"]] = (row["protocol"], row["why"])
        return out


# --- our rows -------------------------------------------------------------------------------------------------

def recorded(folder: Path) -> pd.DataFrame:
    """`folder`'s results.csv with the checks derived from it (`report.derived_rows`), every column of
    `RESULT_COLUMNS` present (a results.csv written before a column existed): the summary's rows and the claims'."""
    rows = pd.read_csv(folder / "results.csv") if (folder / "results.csv").exists() else \
        pd.DataFrame(columns=RESULT_COLUMNS)
    derived = derived_rows(rows)
    rows = pd.concat([rows, derived], ignore_index=True) if len(derived) else rows
    for column in RESULT_COLUMNS:
        if column not in rows:
            rows[column] = None
    return rows


def results(folder: Path) -> pd.DataFrame:
    """`recorded` with the GPU's Table 9 measurement (`gpu_rows`) beside it."""
    rows, gpu = recorded(folder), gpu_rows(folder)
    return pd.concat([rows, gpu], ignore_index=True) if len(gpu) else rows


GPU_PROFILE = "gpu-check"


def gpu_rows(folder: Path) -> pd.DataFrame:
    """The relative speeds `make gpu-check` measured on a GPU (<reports>/gpu/table9_cuda.json) as rows of
    table9_compute in the profile 'gpu-check': never the paper's device class unless it is, which their scale says."""
    path = folder / "gpu" / "table9_cuda.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return pd.DataFrame()
    from ..experiments.compute import PAPER_GPU, PAPER_TIMING, paper_timed_steps

    settings = data.get("settings", {})
    device = str(settings.get("device", "a GPU"))
    steps = int(settings.get("rounds", 0)) * int(settings.get("steps_per_round", 0))
    fields = scale_fields(device=(device, PAPER_GPU), data=(int(settings.get("batch", 0)), PAPER_TIMING["batch"]),
                          steps=(steps, paper_timed_steps()))  # as `compute.table9_scale` states a CPU row's
    rows = []
    for name, m in data.items():
        if name == "settings" or not isinstance(m, dict) or "relative_speed" not in m:
            continue
        rows.append(dict(experiment="table9_compute", setting=name, metric="relative_speed",
                         ours=float(m["relative_speed"]), ours_std=None, n_seeds=1, profile=GPU_PROFILE,
                         device=f"{device} (torch {settings.get('torch', '?')}); make gpu-check",
                         note=f"gpu-check ({path.relative_to(folder).as_posix()}): batch {settings.get('batch')}, "
                              f"{settings.get('rounds')}x{settings.get('steps_per_round')} single steps",
                         scale=json.dumps(fields), learned=None, flags=None, interval=None))
    return pd.DataFrame(rows)


def best_row(rows: pd.DataFrame, experiment: str, setting: str, metric: str, profile: str | None = None):
    """Our row of a cell at its best profile (paper > quick > smoke > others), or None."""
    mine = rows[(rows.experiment == experiment) & (rows.setting == setting) & (rows.metric == metric)]
    if profile is not None:
        mine = mine[mine.profile == profile]
    else:
        mine = mine[mine.profile != GPU_PROFILE]
    if mine.empty:
        return None
    return mine.assign(_r=mine.profile.map(PROFILE_RANK).fillna(9)).sort_values("_r", kind="stable").iloc[0] \
        .drop("_r").to_dict()


def _peer(experiment: str, setting: str, model: str) -> dict | None:
    """A peer's published number for a cell: its benchmark is the setting, or the longest that the setting starts
    with ('PhysioNet' for 'PhysioNet, z-score, token mask')."""
    peers = [p for p in _peer_rows() if p["experiment"] == experiment and p["model"] == model
             and (setting == p["benchmark"] or setting.startswith(p["benchmark"] + ","))]
    return max(peers, key=lambda p: len(p["benchmark"])) if peers else None


def cells(claim: dict, rows: pd.DataFrame, folder: Path) -> list[dict]:
    """A claim's evidence cells, each with its reference, our row (None: not run), its status (`judge.judge`; a
    peer in another or unknown protocol: not comparable; a for that a baseline reaches too: at ceiling), its reading
    (`reading`) and role ('own': the cell that checks the paper's number in the unit of a claim whose comparison is
    not like for like, else 'claim'); the GPU's Table 9 rows beside the CPU's."""
    tables = folder / "tables"
    own = claim.get("compares", "").split("~")[0].split("|") if mismatch(claim) else None
    out = []
    for experiment, pattern, metric, peer in claim["evidence"]:
        refs = [p for p in paper_values() if p["experiment"] == experiment and p["metric"] == metric
                and fnmatchcase(p["setting"], pattern)]
        for p in refs:
            ref, protocol = p, ("same", "")
            if peer:
                found = _peer(experiment, p["setting"], peer)
                if found is None:
                    raise ValueError(f"{CLAIMS.name}: claim {claim['claim']}: no published {peer} number for "
                                     f"{experiment} / {p['setting']} in peer_values.csv")
                ref = judge.peer_reference(p, found)
            who = peer or (p.get("reference") if p.get("reference") not in ("paper", "the authors' code", None, "")
                           else "")
            if who:  # a peer's number (peer_values, or a paper_values row that holds one): in its protocol only
                protocol = protocols().get((experiment, p["setting"], who))
                if protocol is None:
                    raise ValueError(f"{PROTOCOLS.name}: claim {claim['claim']} compares {experiment} / "
                                     f"{p['setting']} with {who}: say whether its protocol is ours (same, differs, "
                                     "unknown)")
            for profile in (None, GPU_PROFILE) if experiment == "table9_compute" else (None,):
                row = best_row(rows, experiment, p["setting"], metric, profile)
                if row is None and profile is not None:
                    continue
                status = "not run" if row is None else judge.judge(ref, row, tables)
                if row is not None and protocol[0] != "same":
                    status = f"not comparable: protocol {protocol[0]}: {protocol[1]}"
                elif reading(status) == "for" and (also := judge.ceiling(ref, row, rows)):
                    bare, _, seeds = status.partition("; ")
                    status = f"{CEILING}: {bare}, as {also} reach{'es' if ' and ' not in also else ''} it too" \
                        + (f"; {seeds}" if seeds else "")
                role = "own" if own == [experiment, p["setting"], metric] else "claim"
                out.append(dict(experiment=experiment, setting=p["setting"], metric=metric, reference=ref,
                                row=row, status=status, reading=reading(status, claim["judge"]), role=role))
    return out


def mismatch(claim: dict) -> str:
    """Why the claim's own comparison (`compares`: 'experiment|setting|metric~peer|peer metric') is not like for
    like, or ''."""
    spec = claim.get("compares", "").strip()
    if not spec:
        return ""
    ours, theirs = spec.split("~")
    experiment, setting, metric = ours.split("|")
    peer, peer_metric = theirs.split("|")
    if metric == peer_metric:
        return ""
    value = next((p["paper"] for p in paper_values() if (p["experiment"], p["setting"], p["metric"])
                  == (experiment, setting, metric)), None)
    found = next((p for p in _peer_rows() if p["experiment"] == experiment and p["model"] == peer
                  and p["metric"] == peer_metric), None)
    if value is None or found is None:
        return f"the claim compares {metric} with {peer}'s {peer_metric}"
    return (f"the claim compares the paper's {value:g} ({metric.replace('_', ' ')}) with {peer}'s {found['value']:g} "
            f"({peer_metric.replace('_', ' ')}): not like for like")


# --- the table ------------------------------------------------------------------------------------------------

def name_of(cell: dict) -> str:
    refs = {e: a["paper_ref"] for a in artefacts() for e in a["experiments"]}
    peer = cell["reference"].get("reference", "paper")
    vs = f" vs {peer}" if peer not in ("paper", "the paper") else ""
    gpu = " (gpu-check)" if cell["row"] is not None and cell["row"].get("profile") == GPU_PROFILE else ""
    return f"{refs.get(cell['experiment'], cell['experiment'])} {cell['setting']}{vs}{gpu}"


def _short(status: str) -> str:
    """A status without its qualifiers and seeds note: 'worse than the paper', 'at ceiling: matches, as ...'."""
    s = status.split("; ")[0]
    return re.sub(r" \((?:[a-z -]+, )*[a-z -]+\)$", "", s)


WORDS = (("for", "for"), ("at ceiling", "ceiling"), ("against", "against"), ("not reproduced", "not reproduced"),
         ("not tested", "untested"), ("other device", "device"), ("other protocol", "protocol"))


def _fared(cell: dict, otherwise: str) -> str:
    """How the paper's own number fared in its unit: 'reproduced' (for), 'not reproduced' (judged otherwise), else
    `otherwise`."""
    return "reproduced" if cell["reading"] == "for" else "not reproduced" if cell["reading"] in JUDGED else otherwise


def verdict_text(claim: dict, found: list[dict], outcome_: str) -> str:
    """'partially confirmed (of 9 rows: 1 for, 1 at ceiling, ...)'; 'insufficient evidence (1 of 5 data sets
    tested: ...)'; a claim judged like for like apart from its own number adds how that number fared."""
    unit = claim.get("unit") or "row"
    like = [c for c in found if c.get("role") != "own"]
    own = [c for c in found if c.get("role") == "own"]
    said = []
    if like:
        parts = ", ".join(f"{n} {w}" for w, r in WORDS if (n := sum(c["reading"] == r for c in like)))
        units = f"{unit}{'s' if len(like) != 1 else ''}"
        said.append(f"{sum(c['reading'] in TESTED for c in like)} of {len(like)} {units} tested: {parts}"
                    if outcome_ == "insufficient evidence" else
                    f"of {len(like)} {units}{' like for like' if own else ''}: {parts}")
    if own:
        said.append(f"the paper's own number in its unit: {', '.join(_fared(c, 'not tested') for c in own)}")
    return f"{outcome_} ({'; '.join(said)})" if said else outcome_


def _detail(cell: dict) -> str:
    """What a judged cell adds to its name: why it is not reproduced, our number against a paper's or peer's number
    it differs from or falls short of, its seeds note ('1 seed', 'on 4 of 5 seeds ...')."""
    status, r = cell["status"], cell["row"]
    bare = _short(status)
    parts = []
    if bare.startswith("not reproduced: "):
        parts.append(bare.removeprefix("not reproduced: "))
    elif bare.startswith(f"{CEILING}: ") or bare.startswith("not comparable: protocol"):
        parts.append(bare.split(", as ", 1)[1] if ", as " in bare else bare.split(": ", 2)[2])
    elif cell["reading"] in ("not reproduced", "against") and r is not None:
        parts.append(f"{float(r['ours']):.4g} vs {cell['reference']['paper']:g}")
    if "; " in status:
        parts.append(status.split("; ", 1)[1])
    elif r is not None and cell["reading"] in JUDGED and str(r.get("n_seeds")) in ("1", "1.0") \
            and judge._parse(r.get("learned")) is not None:  # a trained model's number from one seed: said
        parts.append("1 seed")
    return f" ({'; '.join(parts)})" if parts else ""


def _device_values(cells_: list[dict]) -> str:
    """'cpu: absolute 1, quantized 0.99, continuous 0.98; NVIDIA H200: ...' for cells measured on another device."""
    by: dict[str, list[str]] = {}
    for c in cells_:
        r = c["row"]
        device = device_text(r.get("device")).split(" (")[0] if r is not None else "?"
        by.setdefault(device, []).append(f"{c['setting']} {float(r['ours']):.2f}" if r is not None else c["setting"])
    return "; ".join(f"{d}: {', '.join(v)}" for d, v in by.items())


def evidence_text(claim: dict, found: list[dict], why: str, link: str) -> str:
    """The short evidence cell: who is for, against, not reproduced (and why), how many untested, and a link."""
    groups = []
    own = [c for c in found if c.get("role") == "own"]
    found = [c for c in found if c.get("role") != "own"]
    for word, r in (("for", "for"), ("at ceiling", "ceiling"), ("against", "against"),
                    ("not reproduced", "not reproduced"), ("other protocol", "protocol")):
        names = [name_of(c) + _detail(c) for c in found if c["reading"] == r]
        if names:
            groups.append(f"{word}: " + "; ".join(names))
    device = [c for c in found if c["reading"] == "device"]
    if device:
        paper = ", ".join(f"{c['setting']} {c['reference']['paper']:g}" for c in device
                          if c["row"] is not None and c["row"].get("profile") != GPU_PROFILE) or ""
        groups.append("other device: " + _device_values(device) + (f" (the paper's: {paper})" if paper else ""))
    unresolved = [c for c in found if c["reading"] == "untested" and _short(c["status"]).startswith("not resolved")]
    if unresolved:
        groups.append("not resolved at this scale: " + "; ".join(name_of(c) + _detail(c) for c in unresolved))
    rest = [c for c in found if c["reading"] == "untested" and c not in unresolved]
    if rest:
        kinds = pd.Series([_short(c["status"]).removeprefix("not tested: ") for c in rest]).value_counts()
        groups.append("not tested: " + ", ".join(f"{n} {k}" for k, n in kinds.items()))
    if own:
        groups.append("the paper's own number, in its unit: " + "; ".join(
            f"{name_of(c)} {_fared(c, c['reading'])}{_detail(c)}" for c in own))
    text = ". ".join(groups) if groups else "no row"
    if why:
        text = f"{why}. {text}"
    return f"{text} ([rows]({link}))"


def devices_of(found: list[dict]) -> str:
    """Who trained and who published the judged cells (else every cell with a row): the trainings' device and stack
    from the record, then the publishing machine."""
    use = [c for c in found if c["reading"] in JUDGED] or [c for c in found if c["row"] is not None]
    return "; ".join(dict.fromkeys(device_text(c["row"].get("device")) for c in use if c["row"] is not None))


def device_text(cell) -> str:
    """A row's device column read as who trained and who published: 'NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0),
    published on cpu (AMD EPYC, 2 threads)'; 'cpu (AMD EPYC, 2 threads)' when one machine did both."""
    text = str(cell or "").strip()
    if not text or text == "nan":
        return ""
    parts = [p.strip() for p in text.split("; ")]
    if parts[0].startswith("trained on "):
        trained = parts[0].removeprefix("trained on ")
        published = next((p.removeprefix("published on ") for p in parts if p.startswith("published on ")), "")
        trained = ", ".join(t if "(torch" in t or t.startswith("cpu") else f"{t} (stack not recorded)"
                            for t in _split_devices(trained))
        return f"{trained}, published on {published}" if published else trained
    return parts[0]


def _split_devices(text: str) -> list[str]:
    """'NVIDIA H200 (torch 2.11, CUDA 13.0), cpu (AMD EPYC, 2 threads)' -> its devices (commas inside brackets kept)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()] if cur.strip() else out


def on_cpu(device_cell) -> bool:
    """Every device that trained the row is a CPU."""
    first = str(device_cell).split(";")[0].lower().removeprefix("trained on ")
    return all(d.strip().startswith("cpu") for d in _split_devices(first))


def scale_of(found: list[dict]) -> str:
    """The scale of the judged cells (else every run cell), in the words of their scale facts and the device that
    trained them: 'paper scale', 'paper scale, trained on a CPU', 'paper scale, fewer seeds (3 / 5)', or the
    smallest fraction and the qualifiers of a reduced run."""
    use = [c for c in found if c["reading"] in JUDGED] or [c for c in found if c["row"] is not None]
    out = []
    for c in use:
        r = c["row"]
        if r is None:
            continue
        quals = qualifiers(r.get("scale"), r.get("profile"))
        cpu = ", trained on a CPU" if on_cpu(r.get("device")) else ""
        if not quals:
            text = "paper scale" + cpu
        elif quals == ["fewer seeds"]:
            text = f"paper scale, fewer seeds ({_pair(r.get('scale'), 'seeds')}){cpu}"
        else:
            text = ", ".join(x for x in (_fraction(r.get("scale")), ", ".join(quals)) if x)
        out.append(text)
    return "; ".join(dict.fromkeys(out)) if out else "not run"


def to_test(claim: dict, found: list[dict], runs: pd.DataFrame | None, hours: dict) -> str:
    """What it would take to judge the untested cells: the paper profile of their notebooks that have not run it
    (with the plan's hours on one H100), and the data sets a paper run went without."""
    todo = [c for c in found if c["reading"] in ("untested", "device")]
    if not todo:
        return ""
    if claim["claim"] == "L1":
        return "`make bench` on a GPU of the paper's class (Table 9: an NVIDIA GTX 1650 Ti)"
    done = pd.DataFrame() if runs is None or runs.empty else runs[(runs.status == "ok") & (runs.profile == "paper")]
    ran = set(done.notebook.str[:2]) if len(done) else set()
    without = " ".join(done.note) if len(done) and "note" in done else ""  # 'ran without (optional) UEA Heartbeat ...'
    need, missing, newer = [], [], []
    for c in todo:
        nbs = [nb for nb in notebook_of(c["experiment"]) if nb in claim["notebooks"]] or claim["notebooks"]
        paper_done = [nb for nb in nbs if nb in ran]
        if c["row"] is None and paper_done and re.search(rf"\b{re.escape(c['setting'].split(',')[0])}\b", without):
            missing.append(c)  # the data its paper run went without
        elif c["row"] is None and paper_done:  # a row its paper run predates
            newer.append(c)
            need += paper_done
        elif not (c["row"] is not None and c["row"].get("profile") == "paper" and paper_done):
            need += [nb for nb in nbs if nb not in ran] or nbs
    parts = []
    need = list(dict.fromkeys(need))
    if need:
        plan = [f"{nb}: {hours[nb][0]} h FP32 / {hours[nb][1]} h BF16" for nb in need if nb in hours]
        parts.append(f"`make reproduce PROFILE=paper ONLY={','.join(need)}`" + (f" (plan, one H100: {'; '.join(plan)})"
                                                                                if plan else ""))
    if missing:
        parts.append(f"the data of {', '.join(c['setting'] for c in missing)} (`make data`), then the paper run again")
    if newer:
        parts.append(f"({', '.join(c['setting'] for c in newer)}: a row newer than the last paper run)")
    return "; ".join(parts)


CLAIM_COLUMNS = ["claim", "verdict", "evidence", "scale", "trained on", "code", "to test it"]


def claims_view(reports_dir=None, link: str = "ROWS.md") -> tuple[pd.DataFrame, list[dict]]:
    """(the claims table, the details: one dict per claim with its cells) for the front page."""
    from .provenance import code_state as _code_state

    folder = reports_path(reports_dir)
    rows = results(folder)
    runs = pd.read_csv(folder / "runs.csv", dtype=str, keep_default_na=False) \
        if (folder / "runs.csv").exists() else None
    hours = planned_hours()
    table, details = [], []
    for c in claims():
        found = cells(c, rows, folder)
        why = mismatch(c)
        result = outcome([x["reading"] for x in found if x["role"] != "own"], why,
                         [x["reading"] for x in found if x["role"] == "own"])
        profiles = [x["row"]["profile"] for x in found if x["row"] is not None and x["row"]["profile"] in PROFILE_RANK]
        profile = min(profiles, key=PROFILE_RANK.get) if profiles else ""
        code = _code_state(c["notebooks"], profile, folder) if profile else ""
        anchor = f"{link}#claim-{c['claim'].lower()}"
        table.append({"claim": f"{c['claim']}. {c['title']}", "verdict": verdict_text(c, found, result),
                      "evidence": evidence_text(c, found, why, anchor), "scale": scale_of(found),
                      "trained on": devices_of(found), "code": code.split(":")[0] if code else "",
                      "to test it": to_test(c, found, runs, hours)})
        details.append(dict(claim=c, cells=found, outcome=result, mismatch=why))
    return pd.DataFrame(table, columns=CLAIM_COLUMNS), details


def headline(view: pd.DataFrame, cov: dict) -> str:
    """SUMMARY.md's first lines, in words: how the claims came out, the coverage, what the paper profile costs."""
    counts = pd.Series([v.split(" (")[0] for v in view.verdict]).value_counts()
    said = ", ".join(f"**{counts[o]} {o}**" for o in OUTCOMES if o in counts)
    total = planned_total()
    eager = f"; with eager steps {total[2]} h / {total[3]} h, calibrated on an H200" if total and total[2] else ""
    graphed = " with CUDA graphs (estimates not yet measured on a GPU)" if eager else ""
    cost = (f"The whole paper profile is planned (`make plan`) at {total[0]} h FP32 / {total[1]} h BF16 on one "
            f"H100{graphed}{eager}. What each claim would need is in its row." if total else
            "The paper profile has no plan here yet (`make plan`).")
    codes = [c for c in view.get("code", pd.Series(dtype=str)) if c]
    stale = sum(c == "stale" for c in codes)
    code = (f"- **Code.** The runs behind {stale} of the {len(codes)} claims with results are stale: the code they "
            "ran is not proven to be today's (`romae.compendium.staleness`); each artefact's reason and the cost to "
            "redo it are under [Paper artefacts](#paper-artefacts)." if stale else
            f"- **Code.** Every run behind the {len(codes)} claims with results is current: today's code computes "
            "what they hold (`romae.compendium.staleness`).")
    going = [r for r in cov.get("in_progress", []) if "problem" not in r]
    progress = ["- **In progress.** " + "; ".join(
        f"notebook {r['notebook'] or '?'}'s paper run: `{r['name']}` at step {r['steps']:,} of {r['total_steps']:,} "
        f"({100 * r['done']:.0f} %) after {len(r['pieces'])} piece(s)" for r in going)
        + " (`python -m romae.trainings`; the next `make reproduce` of it continues from the committed checkpoint)."
        ] if going else []
    return "\n".join([
        f"- **Claims.** Of the paper's {len(view)} claims and stated limitations: {said}.",
        code, *progress,
        f"- **Coverage.** {cov['paper_scale']} of RoMAE's {cov['cells']} numeric cells in Tables 1-7 and 9 come from "
        f"runs at the paper's scale; {cov['judged']} cells were judged against the paper (the others: a gate failed, "
        f"a reduced run, or not run).",
        f"- **Cost.** {cost}",
        "- **Verdicts** are derived by code from the rows (`romae.runner.claims`), never typed; a row is judged only "
        "when its model learned, its training carries no flag, and its setup matches the paper's.",
        "- **Devices.** Each row says who trained it (device, torch, CUDA) and who published it.",
        "- **Every row** with its status and notes: [ROWS.md](ROWS.md); the notebooks' pages: [index.html](index.html).",
    ]) + "\n"


# --- the plan and the scale facts --------------------------------------------------------------------------

def _fraction(scale_cell) -> str:
    """'5 % of the paper's steps' from a row's scale: the smallest of ours / the paper's over its numeric
    training fields (steps, epochs, data), '' when none is smaller."""
    fields = _parse(scale_cell) if isinstance(scale_cell, str) else None
    best = None
    for k in ("steps", "epochs", "data"):
        ours, paper = (fields or {}).get(k, (None, None))
        if isinstance(ours, (int, float)) and isinstance(paper, (int, float)) and paper > 0 and ours < paper:
            if best is None or ours / paper < best[0]:
                best = (ours / paper, k)
    return "" if best is None else f"{100 * best[0]:.2g} % of the paper's {best[1]}"


def _pair(scale_cell, field: str) -> str:
    ours, paper = (_parse(scale_cell) or {}).get(field, ("?", "?"))
    return f"{ours} / {paper}"


def notebook_of(experiment: str) -> list[str]:
    """The notebooks (NN) that regenerate an experiment (artefacts.csv), [] when none names it."""
    return next((a["notebook"] for a in artefacts() if experiment in a["experiments"]), [])
