{#-
    Overrides dbt-spark's incremental dispatcher (a root-project macro of the same name takes
    precedence):
    - an append or merge whose new rows are empty commits nothing: no Iceberg snapshot, no metadata
      file. The new rows are cached first (after dropping any cache left by an earlier run in the
      same session), and the emptiness check reads the cache. The bench suggests the write itself
      computes the rows again (README, Benchmark); not yet confirmed;
    - a merge into a model with `meta: {merge_pruning_date_column: <date column>}` gets one more
      predicate, `DBT_INTERNAL_DEST.<column> in (<the dates among the new rows>)`, as literals: the
      MERGE reads and rewrites only the target's partitions those dates fall in.
-#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- if execute and strategy in ['append', 'merge'] -%}
        {#- adapter.execute, not run_query: these statements return no result set (PyHive fails on fetch). -#}
        {%- do adapter.execute('uncache table if exists ' ~ source) -%}
        {%- do adapter.execute('cache table ' ~ source) -%}
        {%- set has_new_rows = _has_rows('select * from ' ~ source) -%}
        {%- set pruning_column = config.meta_get('merge_pruning_date_column') -%}
        {%- if strategy == 'merge' and has_new_rows and pruning_column -%}
            {%- set dates = run_query(
                'select distinct cast(' ~ pruning_column ~ ' as string) from ' ~ source
            ).columns[0].values() -%}
            {%- do predicates.append(date_literal_list('DBT_INTERNAL_DEST.' ~ pruning_column, dates)) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if execute and strategy in ['append', 'merge'] and not has_new_rows -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no new rows; nothing committed', info=false) }}
        select 'no new rows for {{ target }}' as skipped
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, predicates or none) }}
    {%- endif -%}
{% endmacro %}
