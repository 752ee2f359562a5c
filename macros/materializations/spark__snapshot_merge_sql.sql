{#-
    Overrides dbt-spark's snapshot MERGE (written against dbt-spark 1.11.0, whose macro renders the
    MERGE): when the staging relation holds no insert, update or delete, the snapshot commits nothing
    (an idle `dbt snapshot` adds no commit to its table). The staging relation is dbt-spark's, named as
    each format stages it (snapshot_staged_relation).
-#}
{% macro spark__snapshot_merge_sql(target, source, insert_cols) -%}
    {%- set staged = snapshot_staged_relation(source) -%}
    {%- set changes = "select * from " ~ staged ~ " where dbt_change_type in ('insert', 'update', 'delete')" -%}
    {%- if execute and not _has_rows(changes) -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no changes; nothing committed', info=false) }}
        select 'no changes for {{ target }}' as skipped
    {%- else -%}
        {{ dbt.spark__snapshot_merge_sql(target, source, insert_cols) }}
    {%- endif -%}
{%- endmacro %}
