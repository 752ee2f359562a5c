{% macro incremental_watermark(column) -%}
    {#-
        max(`column`) of the calling incremental model's existing table, as an integer literal
        (0 when empty, or on a full build), read at execution time so that a filter on it prunes
        files by their column statistics (a scalar subquery would not).
    -#}
    {%- if execute and is_incremental() -%}
        {{ return(run_query("select coalesce(max(" ~ column ~ "), 0) from " ~ this).rows[0][0] | int) }}
    {%- endif -%}
    {{ return(0) }}
{%- endmacro %}
