{% macro checked_since() -%}
    {#-
        What a scheduled build's data tests over history check: only what changed since the
        published build, whose own build passed every test (write-audit-publish), or everything.
        Returns none (check every row) or {'events_watermark': n, 'view_version': v} from the var
        `checked_since`, which `payledger` passes to the builds it runs (payledger/dbt.py, from the
        publication document: the published build's events watermark, the max ingest_seq it folded,
        and the view's version that holds its rows). None when the var is absent (a `dbt build` by
        hand checks every row, as before), when `reconcile_full` is true, and while dbt parses.
        Raises a compiler error when the var is not such a mapping of whole numbers.
    -#}
    {%- set since = var('checked_since', none) -%}
    {%- if since is none or reconcile_full() or not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set check = namespace(valid=since is mapping and since.keys() | sort | list == ['events_watermark', 'view_version']) -%}
    {%- for value in (since.values() if check.valid else []) -%}
        {%- if value is not number or value is boolean or value != (value | int) or value < 0 -%}
            {%- set check.valid = false -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not check.valid -%}
        {{ exceptions.raise_compiler_error(
            "var checked_since must be {\"events_watermark\": <whole number>, \"view_version\": <whole number>}, got "
            ~ (since | tojson)
        ) }}
    {%- endif -%}
    {{ return({'events_watermark': since.events_watermark | int, 'view_version': since.view_version | int}) }}
{%- endmacro %}
