{% macro balance_as_of(merchant_id=none, currency=none, build=none, as_of=none, version=none) %}
    {#-
        A query of merchant_balance_current's rows as they were published: by build `build` (a dbt
        invocation id: the view version balance_invalidations recorded for it), or at `as_of` (an
        ISO timestamp, UTC: the engine's `TIMESTAMP AS OF`, the version current then), or in table
        version `version` (Delta version, Iceberg snapshot id), or now. Optionally one merchant and
        one currency. Raises a compiler error for a malformed value, more than one of build, as_of
        and version, or an unknown build.
        Usage: dbt show --inline "{{ balance_as_of('m_000042', build='<invocation id>') }}"
    -#}
    {%- if [build, as_of, version] | reject('none') | list | length > 1 -%}
        {{ exceptions.raise_compiler_error("balance_as_of takes one of build, as_of and version") }}
    {%- endif -%}
    {%- if version is not none and not (version is number and version == version | int) -%}
        {{ exceptions.raise_compiler_error("version must be an integer (a Delta version or an Iceberg snapshot id), got " ~ (version | string | tojson)) }}
    {%- endif -%}
    {%- set iso_timestamp = '[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?)?' -%}
    {%- if as_of is not none and not (as_of is string and modules.re.fullmatch(iso_timestamp, as_of)) -%}
        {{ exceptions.raise_compiler_error("as_of must be an ISO timestamp YYYY-MM-DD[ HH:MM[:SS[.ffffff]]] (UTC), got " ~ (as_of | string | tojson)) }}
    {%- endif -%}
    {%- set version_clause = (
        'version as of ' ~ version if version is not none
        else 'version as of ' ~ _published_build(build).view_version if build is not none
        else 'timestamp as of ' ~ quoted_literal(as_of | replace('T', ' ')) if as_of is not none
        else ''
    ) -%}
    {#- The view's columns, listed: an older version read by time travel then answers with the
        columns callers read (Python's history readers), or fails naming the missing one. -#}
    select
        merchant_id,
        currency,
        available_balance,
        pending_balance,
        reserve_hold,
        last_event_time,
        source_watermark,
        policy_observed_at,
        written_by_invocation_id,
        written_at
    from {{ ref('merchant_balance_current') }} {{ version_clause }}
    where
        {{ 'merchant_id = ' ~ _balance_key_literal('merchant_id', merchant_id) if merchant_id is not none else 'true' }}
        and {{ 'currency = ' ~ _balance_key_literal('currency', currency) if currency is not none else 'true' }}
{%- endmacro %}
