{#-
    Overrides dbt-spark's incremental dispatcher (a root-project macro of the same name takes
    precedence; written against dbt-spark 1.11.0, whose macro it calls for the SQL itself):
    - a merge into a model whose compiled SQL carries a merge_pruning_predicate comment gets that
      predicate among its incremental predicates: the MERGE reads and rewrites only the target's
      partitions the predicate names (the model knows, from its own inputs, which days it writes;
      no query of the new rows is needed to find out);
    - an append or merge whose new rows are empty commits nothing: no Delta version or Iceberg
      snapshot. Delta skips an empty commit itself (OptimisticTransaction.commitIfNeeded with
      spark.databricks.delta.skipRecordingEmptyCommits, default true, in Delta 3.3), so on Delta
      the write runs as dbt-spark renders it; Iceberg commits an empty snapshot, so there the new
      rows are cached, checked for emptiness and written from the cache (_cached_new_rows).
-#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- set pruning = _merge_pruning_predicate_of(model) -%}
    {%- if strategy == 'merge' and pruning -%}
        {%- do predicates.append(pruning) -%}
    {%- endif -%}
    {%- if execute and strategy in ['append', 'merge'] -%}
        {{ return(format_variant('incremental_write_sql')(strategy, source, target, existing, unique_key, predicates or none)) }}
    {%- endif -%}
    {{ return(dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, predicates or none)) }}
{% endmacro %}


{% macro delta__incremental_write_sql(strategy, source, target, existing, unique_key, predicates) %}
    {{ return(dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, predicates)) }}
{% endmacro %}


{% macro iceberg__incremental_write_sql(strategy, source, target, existing, unique_key, predicates) %}
    {%- set cached = _cached_new_rows(source) -%}
    {%- if not _has_rows('select * from ' ~ cached) -%}
        {{ log('commit_only_changes: ' ~ target ~ ' has no new rows; nothing committed', info=false) }}
        {{ return("select 'no new rows for " ~ target ~ "' as skipped") }}
    {%- endif -%}
    {{ return(dbt.dbt_spark_get_incremental_sql(strategy, cached, target, existing, unique_key, predicates)) }}
{% endmacro %}


{#-
    Private. The predicate a model's compiled SQL names in its merge_pruning_predicate comment
    (rendered by the macro merge_pruning_predicate), or none.
-#}
{% macro _merge_pruning_predicate_of(node) %}
    {%- set found = modules.re.search('/\\* merge_pruning_predicate: (.*?) \\*/', node.get('compiled_code') or '') -%}
    {{ return(found.group(1) if found else none) }}
{% endmacro %}


{#-
    Private. Caches the rows of the temporary view `source` and returns the relation to read them
    from: `<source>__cached`, a temporary view over `source`. Spark 3.5 never matches a cached view
    whose query has CTEs (every dbt model) against a later read of it: each read analyzes the query
    again and numbers its CTEs anew (SPARK-46741, fixed after 3.5). A view that stores its analyzed
    plan is the same plan at every read, so the reads find the cache: the profiles' embedded
    targets (and `payledger thrift`'s server) store every temporary view's analyzed plan
    (spark.sql.legacy.storeAnalyzedPlanForView). A session without it computes the rows again at
    each read (the same rows, slower); the setting is not switched here, which dbt's threads would
    race on.
-#}
{% macro _cached_new_rows(source) %}
    {%- set cached = source.incorporate(path={'identifier': source.identifier ~ '__cached'}) -%}
    {#- adapter.execute, not run_query: these statements return no result set (PyHive fails on fetch). -#}
    {%- do adapter.execute('uncache table if exists ' ~ cached) -%}
    {%- do adapter.execute('create or replace temporary view ' ~ cached ~ ' as select * from ' ~ source) -%}
    {%- do adapter.execute('cache table ' ~ cached) -%}
    {{- return(cached) -}}
{% endmacro %}
