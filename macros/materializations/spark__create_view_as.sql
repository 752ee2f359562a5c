{#-
    Overrides dbt-spark's view DDL (written against dbt-spark 1.11.0, whose macro renders `create or
    replace view` on every run): a view that already stores this SQL and the columns it yields now
    is left as it is, with a no-op select for dbt's main statement (view_is_current says when, per
    table format). On Spark 3.5 a `create or replace view` of a metastore view drops it and creates
    it again; the check reads the metastore and analyses the query, and writes nothing.
    The view is created as dbt-spark creates it when it does not exist, on --full-refresh (also the
    way to create views again after changing a profile's Spark SQL settings, which a view captures
    when it is created), when the model persists docs or enforces a contract (its DDL carries more
    than the query), and whenever view_is_current says no.
-#}
{% macro spark__create_view_as(relation, sql) -%}
    {%- if execute and _view_may_be_kept() and view_is_current(relation, sql) -%}
        {{ log('view ' ~ relation ~ ' already holds this query and its columns; nothing to do', info=false) }}
        select 'view {{ relation }} unchanged' as skipped
    {%- else -%}
        {{ dbt.spark__create_view_as(relation, sql) }}
    {%- endif -%}
{%- endmacro %}


{#- Private. Whether the model's DDL would carry nothing but its query: no --full-refresh, no
    persisted docs, no enforced contract. -#}
{% macro _view_may_be_kept() %}
    {%- set contract = config.get('contract') -%}
    {{ return(not (should_full_refresh() or config.persist_relation_docs() or config.persist_column_docs()
        or (contract and contract.enforced))) }}
{% endmacro %}
