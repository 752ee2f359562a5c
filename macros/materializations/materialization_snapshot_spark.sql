{#-
    Wraps dbt-spark's `snapshot` materialization (dbt-spark 1.11.0; tests/unit/test_upstream.py
    notices a change): an existing snapshot whose source holds no change is left alone after one
    probe (four statements, the strategy's two included) instead of staged as a view, described
    seven times, probed, and the view dropped (thirteen statements). The probe is dbt's own staging
    query (`snapshot_staging_table`, with dbt's strategy), so "no change" means what dbt's MERGE
    would have found: no insert, update or delete. It also checks that the table has every column
    of the source (dbt adds a new one even when no row changed). Anything else, and a new table,
    goes through dbt-spark's materialization unchanged (`_snapshot_is_idle` says which).
-#}
{%- materialization snapshot, adapter='spark' -%}
    {%- set target_relation = adapter.get_relation(
        database=none, schema=model.schema, identifier=model.get('alias', model.get('name'))
    ) -%}
    {%- if _snapshot_is_idle(target_relation) -%}
        {{ log(
            'commit_only_changes: ' ~ target_relation
            ~ ' has no changes; nothing staged or committed',
            info=false
        ) }}
        {#- dbt's noop_statement: the node's result without a statement run on Spark. -#}
        {%- call noop_statement('main', 'no changes for ' ~ target_relation, 'SKIP', 0) -%}
            -- no changes for {{ target_relation }}: nothing staged or committed
        {%- endcall -%}
        {{ return({'relations': [target_relation]}) }}
    {%- endif -%}
    {{ return(dbt.materialization_snapshot_spark()) }}
{%- endmaterialization -%}


{#-
    True when the snapshot table `target_relation` exists and a run of dbt's materialization would
    change nothing: its staging query finds no insert, update or delete, and every column of the
    staged rows is one of the table's. False (dbt's materialization runs) for a missing table,
    hooks, grants, persisted docs, `dbt_valid_to_current`, or hard deletes other than `ignore`.
-#}
{%- macro _snapshot_is_idle(target_relation) -%}
    {%- if target_relation is none or not target_relation.is_table -%}
        {{ return(false) }}
    {%- endif -%}
    {%- if pre_hooks or post_hooks or config.get('grants') or config.get('persist_docs')
        or config.get('dbt_valid_to_current') -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set strategy = strategy_dispatch(config.get('strategy'))(
        model, 'snapshotted_data', 'source_data', model['config'], true
    ) -%}
    {%- if strategy.hard_deletes not in ('ignore', none) -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set staged = snapshot_staging_table(strategy, sql, target_relation) -%}
    {%- set probe = run_query(
        'select * from (' ~ staged ~ ') as staged'
        ~ " where dbt_change_type in ('insert', 'update', 'delete') limit 1"
    ) -%}
    {%- if probe.rows | length > 0 -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set existing = adapter.get_columns_in_relation(target_relation)
        | map(attribute='name') | map('lower') | list -%}
    {%- set staging_only = ['dbt_change_type', 'dbt_unique_key'] -%}
    {%- for column in probe.column_names if column | lower not in existing + staging_only -%}
        {{ return(false) }}
    {%- endfor -%}
    {{ return(true) }}
{%- endmacro -%}
