{% macro record_reconciliation(results) -%}
    {#-
        on-run-end hook: when this invocation ran the reconciliation test and it passed or failed,
        appends one row to merchant_balance_reconciliation_runs (beside its stored failures) with
        what it compared: build_seq, invocation_id, status ('pass' or 'fail'), slices (N),
        checked_slices, failures (keys found wrong), is_full and reconciled_at (UTC). The scope is
        read from the test's compiled SQL, where reconciliation_scope left it as a comment, so the
        row says what ran even when the stored failures changed since. A test that errored or was
        skipped compared nothing and is not recorded: the next build takes its slice again.
        Creates the table on first use, in the project's table format. Renders no SQL itself; its
        statements fetch nothing (adapter.execute: through the Thrift target, PyHive has no rows to
        fetch after DDL or an insert, and run_query's fetch fails).
    -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set test_id = 'test.' ~ project_name ~ '.assert_merchant_balance_current_reconciles' -%}
    {%- for result in results if result.node.unique_id == test_id and (result.status | string) in ['pass', 'fail'] -%}
        {%- set found = modules.re.search('reconciliation_scope: (\\{[^}]*\\})', result.node.compiled_code or '') -%}
        {%- if found is none -%}
            {{ exceptions.raise_compiler_error(test_id ~ " ran without its reconciliation_scope comment: it must render reconciliation_scope() | tojson") }}
        {%- endif -%}
        {%- set scope = fromjson(found.group(1)) -%}
        {%- set runs = reconciliation_runs() -%}
        {#- dbt's relation cache knows the table once made (the test's schema is cached): no statement then. -#}
        {%- if load_relation(runs) is none -%}
            {%- do adapter.execute("create schema if not exists " ~ runs.schema) -%}
            {%- do adapter.execute(
                "create table if not exists " ~ runs ~ " (build_seq bigint, invocation_id string, status string, slices int, "
                ~ "checked_slices array<int>, failures bigint, is_full boolean, reconciled_at timestamp) using " ~ table_format()
            ) -%}
        {%- endif -%}
        {%- do adapter.execute(
            "insert into " ~ runs ~ " select " ~ (scope.build_seq | int) ~ ", " ~ quoted_literal(invocation_id) ~ ", "
            ~ quoted_literal(result.status | string) ~ ", " ~ (scope.slices | int) ~ ", cast(array("
            ~ scope.checked | map('int') | join(', ') ~ ") as array<int>), " ~ (result.failures or 0) | int ~ ", "
            ~ (scope.full | string | lower) ~ ", current_timestamp()"
        ) -%}
        {{ log("Reconciliation " ~ scope.build_seq ~ ": " ~ ("every key" if scope.full else "slice(s) " ~ scope.checked | join(', ') ~ " of " ~ scope.slices)
            ~ ", " ~ (result.status | string) ~ " (" ~ ((result.failures or 0) | int) ~ " key(s) wrong)", info=true) }}
    {%- endfor -%}
    {{ return('') }}
{%- endmacro %}
