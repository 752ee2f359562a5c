{#-
    Overrides dbt-spark's incremental dispatcher (a root-project macro of the same name takes
    precedence; written against dbt-spark 1.11.0, whose macro it calls for the SQL itself):
    - the new rows of an append or merge are computed once: they are cached, and the emptiness
      check, the merge's date list and the write all read the cache;
    - an append or merge whose new rows are empty commits nothing: no Delta version or Iceberg
      snapshot, no metadata
      file;
    - a merge into a model with `meta: {merge_pruning_date_column: <date column>}` gets one more
      predicate, `DBT_INTERNAL_DEST.<column> in (<the dates among the new rows>)`, as literals: the
      MERGE reads and rewrites only the target's partitions those dates fall in.
-#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- if execute and strategy in ['append', 'merge'] -%}
        {%- set source = _cached_new_rows(source) -%}
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


{#-
    Private. Caches the rows of the temporary view `source` and returns the relation to read them
    from: `<source>__cached`, a temporary view over `source` that stores its analyzed plan.
    Spark 3.5 never matches a cached view whose query has CTEs (every dbt model) against a later
    read of it: each read analyzes the query again and numbers its CTEs anew (SPARK-46741, fixed
    after 3.5). A view that stores its analyzed plan is the same plan at every read, so the reads
    find the cache. The setting is restored at once; it only decides how that view is stored.
-#}
{% macro _cached_new_rows(source) %}
    {%- set cached = source.incorporate(path={'identifier': source.identifier ~ '__cached'}) -%}
    {%- set setting = 'spark.sql.legacy.storeAnalyzedPlanForView' -%}
    {%- set before = run_query('set ' ~ setting).columns[1].values()[0] | string | lower -%}
    {#- adapter.execute, not run_query: these statements return no result set (PyHive fails on fetch). -#}
    {%- do adapter.execute('uncache table if exists ' ~ cached) -%}
    {%- do adapter.execute('set ' ~ setting ~ ' = true') -%}
    {%- do adapter.execute('create or replace temporary view ' ~ cached ~ ' as select * from ' ~ source) -%}
    {%- do adapter.execute('set ' ~ setting ~ ' = ' ~ before) -%}
    {%- do adapter.execute('cache table ' ~ cached) -%}
    {{- return(cached) -}}
{% endmacro %}
