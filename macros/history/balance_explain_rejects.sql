{% macro balance_explain_rejects(merchant_id, build=none) -%}
    {#-
        A query of the rejected rows of `merchant_id` (any currency) that build `build` (none: the
        latest) had classified (ingest_seq up to its events watermark), with their reasons, in
        ingest order: the rows balance_explain leaves out. Raises a compiler error for a malformed
        merchant id or an unknown build.
    -#}
    {%- set published = _published_build(build) -%}
    select
        ingest_seq,
        event_id,
        currency,
        event_type,
        amount,
        event_time,
        rejection_reason,
        duplicate_of_ingest_seq
    from {{ ref('payment_event_rejects') }}
    where merchant_id = {{ _balance_key_literal('merchant_id', merchant_id) }}
        and ingest_seq <= {{ published.events_watermark }}
    order by ingest_seq
{%- endmacro %}
