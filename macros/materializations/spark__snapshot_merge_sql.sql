{#-
    Overrides dbt-spark's snapshot MERGE (written against dbt-spark 1.11.0, whose macro renders the
    MERGE): a snapshot whose staging relation holds no insert, update or delete commits nothing (an
    idle `dbt snapshot` adds no commit to its table), each format its own way (snapshot_write_sql).
-#}
{% macro spark__snapshot_merge_sql(target, source, insert_cols) -%}
    {{- return(format_variant('snapshot_write_sql')(target, source, insert_cols)) -}}
{%- endmacro %}


{% macro delta__snapshot_write_sql(target, source, insert_cols) -%}
    {#-
        dbt-spark's MERGE as it is. From an empty staging view Delta commits nothing itself
        (OptimisticTransaction.commitIfNeeded with spark.databricks.delta.skipRecordingEmptyCommits,
        default true in Delta 3.3), and every row dbt stages is an insert, or an update or delete of
        a current row, which the MERGE writes. Probing the view first ran its query twice (the
        probe took 1.7-1.9 s of a changed snapshot from a new process, 2026-12-07).
    -#}
    {{- return(dbt.spark__snapshot_merge_sql(target, source, insert_cols)) -}}
{%- endmacro %}


{% macro iceberg__snapshot_write_sql(target, source, insert_cols) -%}
    {#-
        Iceberg commits an empty snapshot: the staging view (spark_build_snapshot_staging_table) is
        probed first, and a no-op select runs when it holds no change; otherwise dbt-spark's MERGE.
    -#}
    {%- set changes = "select * from " ~ source ~ " where dbt_change_type in ('insert', 'update', 'delete')" -%}
    {%- if execute and not _has_rows(changes) -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no changes; nothing committed', info=false) }}
        {{- return("select 'no changes for " ~ target ~ "' as skipped") -}}
    {%- endif -%}
    {{- return(dbt.spark__snapshot_merge_sql(target, source, insert_cols)) -}}
{%- endmacro %}
