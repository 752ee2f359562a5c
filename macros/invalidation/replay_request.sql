{% macro replay_request() -%}
    {#-
        The manual replay asked for with --vars, validated before any SQL runs (on-run-start calls
        validate_replay_request). Vars: replay_from (ISO date, required with either of the others),
        replay_segment (a known segment) or replay_merchant (a known merchant), not both.
        Returns none when no replay is asked, else {'segment': str|none, 'merchant_id': str|none,
        'from_date': 'yyyy-mm-dd'}. Raises a compiler error saying what was expected otherwise.
    -#}
    {%- set segment = var('replay_segment', none) -%}
    {%- set merchant = var('replay_merchant', none) -%}
    {%- set from_date = var('replay_from', none) -%}
    {%- if segment is none and merchant is none and from_date is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set usage = "expected --vars '{\"replay_segment\": \"<segment>\", \"replay_from\": \"YYYY-MM-DD\"}'"
        ~ " or '{\"replay_merchant\": \"<merchant_id>\", \"replay_from\": \"YYYY-MM-DD\"}'" -%}
    {%- if (segment is none) == (merchant is none) -%}
        {{ exceptions.raise_compiler_error("Manual replay needs exactly one of replay_segment and replay_merchant; " ~ usage) }}
    {%- endif -%}
    {%- set name, kind, value = ('replay_segment', 'segment', segment) if segment is not none else ('replay_merchant', 'merchant_id', merchant) -%}
    {%- if value is not string or not modules.re.fullmatch(identifier_pattern(kind), value) -%}
        {{ exceptions.raise_compiler_error(
            name ~ " must be a string of letters, digits and _ . : - (at most 64), got " ~ (value | string | tojson) ~ "; " ~ usage
        ) }}
    {%- endif -%}
    {%- if from_date is not string or not modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', from_date) -%}
        {{ exceptions.raise_compiler_error("replay_from must be an ISO date string YYYY-MM-DD, got " ~ (from_date | string | tojson) ~ "; " ~ usage) }}
    {%- endif -%}
    {%- set year, month, day = from_date.split('-') | map('int') -%}
    {%- set valid_month = 1 <= month <= 12 -%}
    {%- set last_day = (
        modules.datetime.date(year + month // 12, month % 12 + 1, 1) - modules.datetime.timedelta(days=1)
    ).day if valid_month and year >= 1 else 0 -%}
    {%- if not (valid_month and 1 <= day <= last_day) -%}
        {{ exceptions.raise_compiler_error("replay_from is not a calendar date: " ~ (from_date | tojson) ~ "; " ~ usage) }}
    {%- endif -%}
    {{ return({'segment': segment, 'merchant_id': merchant, 'from_date': from_date}) }}
{%- endmacro %}
