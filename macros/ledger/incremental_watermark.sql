{% macro incremental_watermark(column) -%}
    {#-
        max(`column`) of the calling incremental model's existing table, as an integer literal
        (0 when empty, or on a full build), so that a filter on it prunes files by their column
        statistics (a scalar subquery would not). From the run's stored state (run_watermarks) when
        it keeps this table's column, else read now with a bare `max` (the 0 for an empty table is
        applied here, not by `coalesce`): Delta answers that from its transaction log's file
        statistics without a scan when no file has a deletion vector, and its metadata-only rule
        does not match `coalesce(max(...), 0)`.
    -#}
    {%- if execute and is_incremental() -%}
        {%- for name, source in _watermark_columns().items()
            if source[1] == column and source[0].render() == this.render() -%}
            {{ return(run_watermarks()[name]) }}
        {%- endfor -%}
        {%- set found = run_query("select max(" ~ column ~ ") from " ~ this).rows[0][0] -%}
        {{ return(found | int if found is not none else 0) }}
    {%- endif -%}
    {{ return(0) }}
{%- endmacro %}
