{#-
    Wraps dbt-spark's `view` materialization (dbt-spark 1.11.0, which creates or replaces the view
    on every run; tests/unit/test_upstream.py notices a change): a view that already stores this
    query and the columns it yields now (view_is_current, per table format) is kept. Its hooks run,
    and dbt's main statement is a noop_statement: nothing is run on Spark after the check (on Spark
    3.5 a `create or replace view` of a metastore view drops it and creates it again). Otherwise
    it runs dbt-spark's materialization as it is: a view that does not exist, --full-refresh (also
    the way to create views again after changing a profile's Spark SQL settings, which a view
    captures when it is created), a model that persists docs, enforces a contract or has grants,
    and whenever view_is_current says no.
-#}
{%- materialization view, adapter='spark' -%}
    {%- set target_relation = this.incorporate(type='view') -%}
    {%- if not (execute and _view_may_be_kept() and view_is_current(target_relation, sql)) -%}
        {{ return(create_or_replace_view()) }}
    {%- endif -%}
    {{ log('view ' ~ target_relation ~ ' already holds this query and its columns; nothing to do', info=false) }}
    {{ run_hooks(pre_hooks) }}
    {%- call noop_statement('main', 'view ' ~ target_relation ~ ' unchanged', 'SKIP', 0) -%}
        -- view {{ target_relation }} holds this query and its columns: nothing to do
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{%- endmaterialization -%}


{#- Private. Whether the model's view would be created from its query alone: no --full-refresh,
    no persisted docs, no enforced contract, no grants. -#}
{% macro _view_may_be_kept() %}
    {%- set contract = config.get('contract') -%}
    {{ return(not (should_full_refresh() or config.persist_relation_docs() or config.persist_column_docs()
        or (contract and contract.enforced) or config.get('grants'))) }}
{% endmacro %}
