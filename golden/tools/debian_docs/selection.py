"""The selection: one entry per output document, reviewed by hand.

Each entry is a dict:
    doc      doc id (path under golden/v2/docs)
    pkg      Debian package that installs the source
    src      the source file
    conv     html | nginx-changes | verbatim
    profile  the HTML flavour (what is boilerplate, where headings are)
    select   optional list of element ids: only these sections are kept, in this order
    drop     optional list of element ids removed from the output (truncation at a
             section boundary, or a part that would duplicate another document)
    keep     optional list of heading-name patterns: keep only these sections
    omit     optional list of heading-name patterns: drop these sections
    note     optional remark copied into the provenance
"""

from __future__ import annotations

SQLITE = "/usr/share/doc/sqlite3"
PG = "/usr/share/doc/postgresql-doc-15/html"
NGINX = "/usr/share/doc/nginx"
GIT = "/usr/share/doc/git-doc"
BASHREF = "/usr/share/doc/bash/bashref.html"
POLICY = "/usr/share/doc/debian-policy/policy.html"
DEBREF = "/usr/share/debian-reference"


def entries():
    """The whole selection, in output order."""
    out = []

    def add(doc, pkg, src, conv="html", **kw):
        out.append(dict(doc=doc, pkg=pkg, src=src, conv=conv, **kw))

    for domain in (_sqlite, _postgresql, _nginx, _git, _bash, _debian_policy,
                   _debian_reference):
        domain(add)
    return out


# pragma.html is 80,000 characters: keep the introduction, the list of all
# pragmas and the descriptions of the commonly used ones.
_PRAGMAS_OMITTED = [
    # deprecated (struck through in the list)
    "count_changes", "data_store_directory", "default_cache_size",
    "empty_result_callbacks", "full_column_names", "short_column_names",
    "temp_store_directory",
    # only in builds with non-standard options, or for testing SQLite itself
    "parser_trace", "vdbe_addoptrace", "vdbe_debug", "vdbe_listing", "vdbe_trace",
    "schema_version", "stats", "writable_schema",
    # left out to fit the budget
    "analysis_limit", "cache_spill", "cell_size_check", "checkpoint_fullfsync",
    "data_version", "hard_heap_limit", "soft_heap_limit", "index_xinfo",
    "legacy_alter_table", "legacy_file_format", "locking_mode", "mmap_size",
    "module_list", "function_list", "pragma_list", "collation_list",
    "read_uncommitted", "reverse_unordered_selects", "shrink_memory",
    "table_xinfo", "table_list", "threads", "trusted_schema",
    "ignore_check_constraints", "journal_size_limit", "fullfsync",
    "case_sensitive_like",
]


def _sqlite(add):
    """Pages of the SQLite documentation."""
    for page in [
        "foreignkeys", "datatype3", "wal", "lang_createtable", "limits", "lang_upsert",
        "autoinc", "lang_transaction", "lang_createview", "lang_droptable",
        "lang_reindex", "lang_comment", "lang_dropindex",
    ]:
        add(f"sqlite/{page}.md", "sqlite3-doc", f"{SQLITE}/{page}.html", profile="sqlite")
    add("sqlite/pragma.md", "sqlite3-doc", f"{SQLITE}/pragma.html", profile="sqlite",
        omit=["PRAGMA " + p for p in _PRAGMAS_OMITTED],
        note="truncated: the descriptions of deprecated, debugging and testing pragmas and "
             "of some rarely used ones are left out (see sections_omitted); the list of "
             "all pragma names is kept")


def _postgresql(add):
    for page in [
        "routine-vacuuming", "sql-createindex", "auth-pg-hba-conf", "runtime-config-resource",
        "sql-vacuum", "sql-explain", "backup-dump", "indexes-partial", "indexes-types",
        "indexes-multicolumn", "datatype-character", "sql-truncate",
        "runtime-config-autovacuum", "sql-begin",
        "indexes-unique", "routine-reindex", "datatype-uuid", "datatype-boolean",
        "auth-trust", "mvcc-intro",
    ]:
        add(f"postgresql/{page}.md", "postgresql-doc-15", f"{PG}/{page}.html", profile="docbook")


def _nginx(add):
    """nginx-doc ships the upstream CHANGES file and Debian's examples."""
    changes = "/usr/share/doc/nginx-doc/changelog.gz"
    for first, last in [("1.19", "1.22"), ("1.15", "1.18"), ("1.11", "1.14"),
                        ("1.7", "1.10"), ("1.3", "1.6"), ("1.0", "1.2")]:
        add(f"nginx/changes-{first}-{last}.md", "nginx-doc", changes, conv="nginx-changes",
            versions=(first, last), licence_files="CHANGES",
            note=f"upstream CHANGES file, the releases {first}.0 to {last}.x only; "
                 "the title line is added by the converter")
    for name in ["examples/drupal", "examples/wordpress", "examples/virtual_hosts",
                 "examples/mailman", "examples/http", "examples/mail",
                 "examples/nginx.conf", "php", "upstream", "fcgiwrap"]:
        add(f"nginx/debian-{name.replace('/', '-').replace('.', '-')}.md", "nginx-doc",
            f"{NGINX}/{name}", conv="verbatim", licence_files="debian/*",
            note="file kept verbatim in a code block; the title and the first line are "
                 "added by the converter")


def _git(add):
    """Command manual pages and guides."""
    for page in [
        "git-commit", "git-stash", "gitignore", "git-reset", "git-worktree",
        "git-count-objects", "git-credential-cache", "git-prune",
    ]:
        add(f"git/{page}.md", "git-doc", f"{GIT}/{page}.html", profile="asciidoc")
    add("git/git-config.md", "git-doc", f"{GIT}/git-config.html", profile="asciidoc",
        omit=["Variables"],
        note="the list of all configuration variables (230,000 characters) is left out")
    add("git/git-rebase.md", "git-doc", f"{GIT}/git-rebase.html", profile="asciidoc",
        omit=["BEHAVIORAL DIFFERENCES", "MERGE STRATEGIES", "REBASING MERGES",
              "RECOVERING FROM UPSTREAM REBASE", "SPLITTING COMMITS", "NOTES"],
        note="truncated to fit the budget (see sections_omitted)")
    add("git/gitattributes.md", "git-doc", f"{GIT}/gitattributes.html", profile="asciidoc",
        omit=["Generating diff text", "Performing a three-way merge"],
        note="truncated to fit the budget (see sections_omitted)")


def _bash(add):
    """Sections of the Bash Reference Manual (bashref.html)."""
    for doc, ids in [
        ("bash-builtins", ["Bash-Builtins"]),
        ("bash-variables", ["Bash-Variables"]),
        ("readline-init-file", ["Readline-Init-File"]),
        ("bourne-shell-builtins", ["Bourne-Shell-Builtins"]),
        ("shell-parameter-expansion", ["Shell-Parameter-Expansion"]),
        ("job-control", ["Job-Control"]),
        ("the-set-builtin", ["The-Set-Builtin"]),
        ("arrays", ["Arrays"]),
        ("conditional-expressions", ["Bash-Conditional-Expressions"]),
        ("special-parameters", ["Special-Parameters"]),
        ("exit-status", ["Exit-Status"]),
        ("command-substitution", ["Command-Substitution"]),
        ("process-substitution", ["Process-Substitution"]),
    ]:
        add(f"bash/{doc}.md", "bash-doc", BASHREF, profile="texinfo", select=ids,
            licence_files="doc/bashref.texi")


def _debian_policy(add):
    for page in ["ch-controlfields", "ch-files", "ch-relationships", "ch-binary",
                 "ch-maintainerscripts", "ap-flowcharts"]:
        add(f"debian-policy/{page}.md", "debian-policy", f"{POLICY}/{page}.html", profile="sphinx")
    for sid in ["info-documents", "copyright-information"]:
        add(f"debian-policy/ch-docs-{sid}.md", "debian-policy", f"{POLICY}/ch-docs.html",
            profile="sphinx", select=[sid])


# debian-reference: different chapters in each language (no chapter is taken in two
# languages, so each fact is in one language only; the translations chosen are the
# most complete ones).  (lang, chapter, sections or None for the whole chapter)
_DEBREF_CHAPTERS = [
    ("en", "ch03", None),   # The system initialization
    ("en", "ch07", None),   # GUI system
    ("fr", "ch02", [        # Gestion des paquets Debian
        ("1", "_debian_package_management_prerequisites"),
        ("2", "_basic_package_management_operations"),
        ("6", "_recovery_from_a_broken_system"),
    ]),
    ("de", "ch04", [        # Authentifizierung und Zugriffskontrolle
        ("1", "_normal_unix_authentication"),
        ("2", "_managing_account_and_password_information"),
        ("3", "_good_password"),
        ("4", "_creating_encrypted_password"),
        ("5", "_pam_and_nss"),
        ("6", "_security_of_authentication"),
        ("7", "_other_access_controls"),
    ]),
    ("de", "ch05", [        # Netzwerkkonfiguration
        ("1", "_the_basic_network_infrastructure"),
        ("2", "_the_modern_network_configuration_for_desktop"),
        ("3", "_the_modern_network_configuration_without_gui"),
        ("4", "_the_low_level_network_configuration"),
        ("5", "_network_optimization"),
        ("6", "_netfilter_infrastructure"),
    ]),
    ("ja", "ch11", [        # データー変換
        ("1", "_text_data_conversion_tools"),
        ("2", "_xml_data"),
        ("3", "_type_setting"),
        ("4", "_printable_data"),
        ("5", "_the_mail_data_conversion"),
        ("6", "_graphic_data_tools"),
        ("7", "_miscellaneous_data_conversion"),
    ]),
]


def _debian_reference(add):
    for lang, ch, sections in _DEBREF_CHAPTERS:
        pkg = f"debian-reference-{lang}"
        src = f"{DEBREF}/{ch}.{lang}.html"
        if sections is None:
            add(f"debian-reference/{lang}/{ch}.md", pkg, src, profile="docbook")
            continue
        for num, sid in sections:
            slug = sid.strip("_").replace("_", "-")
            add(f"debian-reference/{lang}/{ch}-{num}-{slug}.md", pkg, src, profile="docbook",
                select=[sid])
