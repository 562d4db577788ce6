"""Reports: the JSON report (:mod:`.build` from the values in :mod:`.model`, written and read
by :mod:`.files`; the source of truth), its HTML rendering (:mod:`.html`) and the comparison
of two saved reports (:mod:`.compare`)."""

from evals.score.metrics import DOCUMENTS, DOCUMENTS_DEPTH

from .build import GATE_DEPTH, Scored, build_report, kept_hits, score_stage
from .files import (
    DECIMALS,
    LIBRARIES,
    SCHEMA_PATH,
    SCHEMA_VERSION,
    canonical,
    dumps,
    environment,
    git_commit,
    load_json,
    run_metadata,
    schema,
    validate,
    write_canonical,
    write_json,
)
from .model import (
    VERDICTS,
    GoldAnswer,
    HitRecord,
    Provenance,
    Question,
    ReportError,
    Settings,
    StageResult,
    compact_source,
)
from .reach import needed_depth, unreachable

__all__ = [
    "DECIMALS",
    "DOCUMENTS",
    "DOCUMENTS_DEPTH",
    "GATE_DEPTH",
    "LIBRARIES",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "VERDICTS",
    "GoldAnswer",
    "HitRecord",
    "Provenance",
    "Question",
    "ReportError",
    "Scored",
    "Settings",
    "StageResult",
    "build_report",
    "canonical",
    "compact_source",
    "dumps",
    "environment",
    "git_commit",
    "kept_hits",
    "load_json",
    "needed_depth",
    "run_metadata",
    "schema",
    "score_stage",
    "unreachable",
    "validate",
    "write_canonical",
    "write_json",
]
