{% macro checked_since() -%}
    {#-
        What a build's data tests over history check: only what changed since the published build,
        whose own build ran and passed them (write-audit-publish), or everything. Returns none (check
        every row) or {'events_watermark': n, 'view_version': v, 'written_after': t}, from the
        environment variable PAYLEDGER_CHECKED_SINCE that `payledger` sets for the builds and tests
        it runs (payledger/dbt.py, from the publication document: the published build's events
        watermark, the max ingest_seq it folded; the view's version that holds its rows; and when it
        was published, UTC 'YYYY-MM-DD HH:MM:SS.ffffff'). Read only while nodes run, so that dbt's
        partial parsing does not see it change. None when it is unset (a `dbt build` by hand checks
        every row), when `reconcile_full` is true, and while dbt parses. Raises a compiler error
        when it is not such a JSON object (two whole numbers and that timestamp).
    -#}
    {%- if not execute or reconcile_full() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set given = env_var('PAYLEDGER_CHECKED_SINCE', '') -%}
    {%- if given == '' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set since = fromjson(given) -%}
    {%- set check = namespace(valid=since is mapping and since.keys() | sort | list == ['events_watermark', 'view_version', 'written_after']) -%}
    {%- for value in ([since.events_watermark, since.view_version] if check.valid else []) -%}
        {%- if value is not number or value is boolean or value != (value | int) or value < 0 -%}
            {%- set check.valid = false -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if check.valid and not (since.written_after is string
            and modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}', since.written_after)) -%}
        {%- set check.valid = false -%}
    {%- endif -%}
    {%- if not check.valid -%}
        {{ exceptions.raise_compiler_error(
            "PAYLEDGER_CHECKED_SINCE must be {\"events_watermark\": <whole number>, \"view_version\": <whole number>,"
            ~ " \"written_after\": \"YYYY-MM-DD HH:MM:SS.ffffff\"}, got " ~ given
        ) }}
    {%- endif -%}
    {{ return({
        'events_watermark': since.events_watermark | int,
        'view_version': since.view_version | int,
        'written_after': since.written_after,
    }) }}
{%- endmacro %}
