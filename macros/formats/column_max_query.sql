{% macro column_max_query(relation, column) -%}
    {#-
        A one-row query whose column `value` is max(`column`) of `relation`, for a bigint column that
        only grows (a watermark), read from file statistics where the format keeps them:
        - delta: a bare `select max(column)`, which Delta answers from its transaction log's file
          statistics when the table has no deletion vectors (a one-column scan otherwise);
        - iceberg: the upper bounds of the live data files (`<relation>.data_files`), no scan. The
          bounds cover rows deleted by later MERGEs too: exact only for a column whose rows are
          replaced by rows with an equal or greater value. `value` is the string 'no bounds' when
          some live file has no bound; the caller then reads max() by a scan.
        null (or 'no bounds') as described; null when the table is empty.
    -#}
    {{- return(format_variant('column_max_query')(relation, column)) -}}
{%- endmacro %}


{% macro delta__column_max_query(relation, column) -%}
    select max({{ column }}) as value from {{ relation }}
{%- endmacro %}


{% macro iceberg__column_max_query(relation, column) -%}
    select
        case
            when count(*) = count(readable_metrics.{{ column }}.upper_bound)
                then cast(max(readable_metrics.{{ column }}.upper_bound) as string)
            else 'no bounds'
        end as value
    from {{ relation }}.data_files
{%- endmacro %}
