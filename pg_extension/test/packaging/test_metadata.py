"""The extension's packaging metadata agrees with itself (no server needed).

mccdb.control, META.json (PGXN), the SQL scripts PGXS installs (DATA) and
the upgrade chain must name the same versions, or `CREATE EXTENSION` and
`ALTER EXTENSION ... UPDATE` break for someone.
"""
import json
import pathlib
import re

EXT = pathlib.Path(__file__).resolve().parents[2]


def control():
    out = {}
    for line in (EXT / "mccdb.control").read_text().splitlines():
        m = re.match(r"\s*(\w+)\s*=\s*'?([^'#]*?)'?\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def makefile_data():
    text = (EXT / "Makefile").read_text()
    m = re.search(r"^DATA\s*=\s*(.*)$", text, re.M)
    return set(m.group(1).split())


def test_meta_json_names_the_control_files_version():
    meta = json.loads((EXT / "META.json").read_text())
    version = control()["default_version"]
    assert meta["provides"]["mccdb"]["version"] == f"{version}.0"
    assert meta["version"] == f"{version}.0"
    assert (EXT / meta["provides"]["mccdb"]["file"]).is_file()
    assert (EXT / meta["provides"]["mccdb"]["docfile"]).is_file()
    assert meta["license"] == "postgresql"


def test_every_version_installs_and_updates_to_the_default():
    version = control()["default_version"]
    scripts = {p.name for p in EXT.glob("mccdb--*.sql")}
    assert f"mccdb--{version}.sql" in scripts
    assert scripts == makefile_data(), "PGXS DATA must install every script"
    # every older full script has an update path to the default version
    versions = {m.group(1) for s in scripts if (m := re.fullmatch(r"mccdb--([\d.]+)\.sql", s))}
    edges = dict(m.groups() for s in scripts
                 if (m := re.fullmatch(r"mccdb--([\d.]+)--([\d.]+)\.sql", s)))
    for v in versions - {version}:
        seen = v
        while seen in edges:
            seen = edges[seen]
        assert seen == version, f"no update path from {v} to {version}"


def test_control_file_is_what_a_packager_expects():
    c = control()
    assert c["module_pathname"] == "$libdir/mccdb"
    # objects refer to each other through @extschema@: not relocatable
    assert c["relocatable"] == "false"
    assert "schema" not in c, "let the DBA choose the schema at CREATE EXTENSION"
    assert c.get("trusted", "false") == "false"
