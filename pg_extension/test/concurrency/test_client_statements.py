"""Only statements a client sent are gated and counted as top level (issue
26, defect 11).

A deferred constraint trigger fires at COMMIT, after the client's statement
is done, at execution nesting level 0: its queries are the trigger's, not a
client's, and must not go through the gate (nor be counted, coloured or
learned from) as if the client had sent them. The same SELECT sent by the
client is gated: the control that the observation can see a gated query.
"""
from conftest import configure, connect

EXPENSIVE = "select count(*) from pg_class a, pg_class b where a.oid < b.oid"


def admitted(ctl):
    return ctl.execute("select coalesce(sum(admissions + bypasses), 0) from mccdb_query_stats"
                       ).fetchone()[0]


def test_a_deferred_trigger_at_commit_is_not_a_client_statement(ctl):
    ctl.execute("drop table if exists mccdb_deferred_t, mccdb_deferred_log")
    ctl.execute("create table mccdb_deferred_t (x int)")
    ctl.execute("create table mccdb_deferred_log (n bigint)")
    ctl.execute(f"""create or replace function mccdb_deferred_f() returns trigger
                    language plpgsql as $$
                    declare n bigint;
                    begin
                        select ({EXPENSIVE}) into n;
                        insert into mccdb_deferred_log values (n);
                        return null;
                    end $$""")
    ctl.execute("""create constraint trigger mccdb_deferred_c after insert on mccdb_deferred_t
                   deferrable initially deferred for each row execute function mccdb_deferred_f()""")
    try:
        configure(ctl, schedule="sls", min_cost=0)
        ctl.execute("select mccdb_query_stats_reset()")
        with connect() as c:
            c.execute("begin")
            c.execute("insert into mccdb_deferred_t values (1)")    # gated itself (min_cost 0)
            before = admitted(ctl)
            c.execute("commit")
            assert admitted(ctl) == before, "the trigger's query at COMMIT went through the gate"
            c.execute(EXPENSIVE).fetchall()
            assert admitted(ctl) == before + 1, "the client's own SELECT is gated"
        # the trigger did run its SELECT at COMMIT
        assert ctl.execute("select count(*) from mccdb_deferred_log where n > 0").fetchone()[0] == 1
    finally:
        ctl.execute("drop table if exists mccdb_deferred_t, mccdb_deferred_log")
        ctl.execute("drop function if exists mccdb_deferred_f()")


def test_an_event_trigger_s_query_is_not_a_client_statement(ctl):
    """An event trigger runs inside the client's DDL, at level 0 and in its
    portal: the utility nests what it runs, as a function's statements are."""
    ctl.execute("drop event trigger if exists mccdb_ddl_e")
    ctl.execute("drop table if exists mccdb_ddl_log")
    ctl.execute("create table mccdb_ddl_log (n bigint)")
    ctl.execute(f"""create or replace function mccdb_ddl_f() returns event_trigger
                    language plpgsql as $$
                    declare n bigint;
                    begin
                        select ({EXPENSIVE}) into n;
                        insert into mccdb_ddl_log values (n);
                    end $$""")
    ctl.execute("create event trigger mccdb_ddl_e on ddl_command_end "
                "when tag in ('CREATE SEQUENCE') execute function mccdb_ddl_f()")
    try:
        configure(ctl, schedule="sls", min_cost=0)
        ctl.execute("select mccdb_query_stats_reset()")
        with connect() as c:
            c.execute("create sequence mccdb_ddl_s")
            assert admitted(ctl) == 0, "the event trigger's query went through the gate"
        assert ctl.execute("select count(*) from mccdb_ddl_log where n > 0").fetchone()[0] == 1
    finally:
        ctl.execute("drop event trigger if exists mccdb_ddl_e")
        ctl.execute("drop sequence if exists mccdb_ddl_s")
        ctl.execute("drop table if exists mccdb_ddl_log")
        ctl.execute("drop function if exists mccdb_ddl_f()")
