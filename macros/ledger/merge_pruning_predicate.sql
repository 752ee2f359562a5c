{% macro merge_pruning_predicate(predicate) -%}
    {#-
        Renders `predicate` (SQL over the MERGE target, aliased DBT_INTERNAL_DEST as in dbt's
        incremental_predicates) as a comment the incremental dispatcher reads from the model's
        compiled SQL (dbt_spark_get_incremental_sql): the model's MERGE is limited to the target
        rows it names. For a model that knows, from its inputs, which partitions it writes; the
        comment also shows them in target/compiled/. `predicate` must not contain `*/`.
    -#}
    {%- if '*/' in predicate -%}
        {{ exceptions.raise_compiler_error("merge_pruning_predicate: the predicate must not contain */: " ~ predicate) }}
    {%- endif -%}
    /* merge_pruning_predicate: {{ predicate }} */
{%- endmacro %}
