{#-
    The fold's identity, independent of reserve policies: per key,
    available + pending + reserve_hold = captures - refunds - chargebacks lost - payouts.
    Computed straight from the accepted events, not from the postings.
    Which events: checked_since. With none (a build by hand, the nightly job, CI), every accepted
    event: the identity on every key. In a build that payledger runs, the published build passed
    it on every key, so it is checked as a change: each key's total now = its total in the
    published version (0 for a new key) + what the accepted events past the published events
    watermark moved. That covers every key (the view is read whole at both versions, a small
    read), and reads only the new events of history.
-#}
{%- set since = checked_since() %}
{%- set rows = changed_since_checked(since, ingest_seq='ingest_seq') %}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted and {{ rows }}
),

moved as (
    select
        merchant_id,
        currency,
        sum(
            case event_type
                when 'capture_settled' then amount
                when 'refund_posted' then -amount
                when 'chargeback_lost' then -amount
                when 'payout_paid' then -amount
                else 0
            end
        ) as moved_total
    from accepted_events
    group by 1, 2
),

{% if since is not none %}
published_rows as (
    select
        merchant_id,
        currency,
        available_balance + pending_balance + reserve_hold as published_total
    {#- Spark's time travel, on Delta and Iceberg alike; sqlfluff reads `version` as an alias. #}
    from {{ ref('merchant_balance_current') }} version as of {{ since.view_version }}  -- noqa: AL01, AL05, RF04
),

expected as (
    select
        coalesce(published_rows.merchant_id, moved.merchant_id) as merchant_id,
        coalesce(published_rows.currency, moved.currency) as currency,
        coalesce(published_rows.published_total, 0) + coalesce(moved.moved_total, 0) as expected_total
    from published_rows
    full outer join moved
        on published_rows.merchant_id = moved.merchant_id
        and published_rows.currency = moved.currency
),
{% else %}
expected as (
    select
        merchant_id,
        currency,
        moved_total as expected_total
    from moved
),
{% endif %}

view_rows as (
    select
        merchant_id,
        currency,
        available_balance + pending_balance + reserve_hold as view_total
    from {{ ref('merchant_balance_current') }}
)

select
    coalesce(expected.merchant_id, view_rows.merchant_id) as merchant_id,
    coalesce(expected.currency, view_rows.currency) as currency,
    expected.expected_total,
    view_rows.view_total
from expected
full outer join view_rows
    on expected.merchant_id = view_rows.merchant_id
    and expected.currency = view_rows.currency
where not (expected.expected_total <=> view_rows.view_total)
