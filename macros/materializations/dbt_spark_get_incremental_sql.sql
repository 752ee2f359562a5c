{#-
    Overrides dbt-spark's incremental dispatcher (a root-project macro of the same name takes
    precedence) so that an append or merge whose new rows are empty commits nothing: no Iceberg
    snapshot, no metadata file. The new rows are cached first (after dropping any cache left by an earlier
    run in the same session), so checking for emptiness does not compute the model's query twice.
-#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- if execute and strategy in ['append', 'merge'] -%}
        {#- adapter.execute, not run_query: these statements return no result set (PyHive fails on fetch). -#}
        {%- do adapter.execute('uncache table if exists ' ~ source) -%}
        {%- do adapter.execute('cache table ' ~ source) -%}
        {%- set has_new_rows = _has_rows('select * from ' ~ source) -%}
    {%- endif -%}
    {%- if execute and strategy in ['append', 'merge'] and not has_new_rows -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no new rows; nothing committed', info=false) }}
        select 'no new rows for {{ target }}' as skipped
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{% endmacro %}
