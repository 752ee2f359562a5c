{% macro date_literal_list(column, dates) -%}
    {#-
        A predicate `column in (date 'yyyy-mm-dd', ...)` over the ISO dates `dates` (strings), or
        `false` when there are none: literal dates, so that the scan prunes partitions and files.
    -#}
    {%- if dates | length == 0 -%}
        false
    {%- else -%}
        {{ column }} in (
        {%- for day in dates -%}
            date {{ quoted_literal(day) }}{{ ", " if not loop.last }}
        {%- endfor -%}
        )
    {%- endif -%}
{%- endmacro %}
