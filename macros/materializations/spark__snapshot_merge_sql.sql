{#-
    Overrides dbt-spark's snapshot MERGE (written against dbt-spark 1.11.0, whose macro renders the
    MERGE): when the staging relation holds no insert, update or delete, the snapshot commits nothing
    (an idle `dbt snapshot` adds no commit to its table). The staging relation is dbt-spark's: an
    unqualified temporary view on Iceberg, a schema-qualified view otherwise (Delta).
-#}
{% macro spark__snapshot_merge_sql(target, source, insert_cols) -%}
    {%- set staged = source.identifier if target.is_iceberg else source -%}
    {%- set changes = "select * from " ~ staged ~ " where dbt_change_type in ('insert', 'update', 'delete')" -%}
    {%- if execute and not _has_rows(changes) -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no changes; nothing committed', info=false) }}
        select 'no changes for {{ target }}' as skipped
    {%- else -%}
        {{ dbt.spark__snapshot_merge_sql(target, source, insert_cols) }}
    {%- endif -%}
{%- endmacro %}
