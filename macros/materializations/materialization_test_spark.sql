{#-
    Overrides dbt's `test` materialization for Spark (copied from `materialization test, default` of
    dbt 1.11's global project, in dbt-adapters 1.24.5; tests/unit/test_upstream.py notices a change).
    One change: a stored-failures table that already exists as a Delta or Iceberg table, for a test
    of the same file_format, is replaced in one commit (`create or replace table ... as select`,
    which dbt-spark renders for both formats) instead of being dropped first. On Delta a drop
    deletes the table's folder file by file; a build killed during it left files without a
    transaction log, and every later create of that table failed
    (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION). On both, readers never find the table missing, and
    it keeps its identity and history (an Iceberg table dropped and created is a new table with a
    new UUID). Views and other formats are dropped and created as upstream does.
-#}
{%- materialization test, adapter='spark' -%}

    {% set relations = [] %}
    {% set limit = config.get('limit') %}
    {% set sql_header = config.get('sql_header') if flags.REQUIRE_SQL_HEADER_IN_TEST_CONFIGS else none %}

    {% set sql_with_limit %}
        {{ get_limit_subquery_sql(sql, limit) }}
    {% endset %}

    {% if should_store_failures() %}

        {% set identifier = model['alias'] %}
        {% set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) %}

        {% set store_failures_as = config.get('store_failures_as') %}
        {% if store_failures_as == none %}{% set store_failures_as = 'table' %}{% endif %}
        {% if store_failures_as not in ['table', 'view'] %}
            {{ exceptions.raise_compiler_error(
                "'" ~ store_failures_as ~ "' is not a valid value for `store_failures_as`. "
                "Accepted values are: ['ephemeral', 'table', 'view']"
            ) }}
        {% endif %}

        {% set target_relation = api.Relation.create(
            identifier=identifier, schema=schema, database=database, type=store_failures_as) %}

        {% set file_format = config.get('file_format') %}
        {% set replaced_in_place = old_relation is not none and old_relation.is_table
            and store_failures_as == 'table'
            and relation_is_format(old_relation, file_format) %}
        {% if old_relation and not replaced_in_place %}
            {% do adapter.drop_relation(old_relation) %}
        {% endif %}

        {% call statement(auto_begin=True) %}
            {% if sql_header %}{{ sql_header }}{% endif %}
            {{ get_create_sql(target_relation, sql_with_limit) }}
        {% endcall %}

        {% do relations.append(target_relation) %}

        {% set main_sql %}
            select *
            from {{ target_relation }}
        {% endset %}

        {{ adapter.commit() }}

    {% else %}

        {% set main_sql = sql_with_limit %}

    {% endif %}

    {% set fail_calc = config.get('fail_calc') %}
    {% set warn_if = config.get('warn_if') %}
    {% set error_if = config.get('error_if') %}

    {% call statement('main', fetch_result=True) -%}
        {% if sql_header %}{{ sql_header }}{% endif %}
        {{ get_test_sql(main_sql, fail_calc, warn_if, error_if, limit=none) }}
    {%- endcall %}

    {{ return({'relations': relations}) }}

{%- endmaterialization -%}
