{% macro reconciliation_runs() -%}
    {#-
        The relation of payledger_audit.merchant_balance_reconciliation_runs, one row per
        reconciliation (record_reconciliation): in the schema of the reconciliation test's stored
        failures, wherever its config puts them. Whether it exists yet: load_relation of it.
    -#}
    {%- set failures = node_relation('assert_merchant_balance_current_reconciles') -%}
    {{ return(api.Relation.create(database=failures.database, schema=failures.schema, identifier='merchant_balance_reconciliation_runs', type='table')) }}
{%- endmacro %}
