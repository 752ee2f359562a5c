{#-
    The fold's identity, independent of reserve policies: per key,
    available + pending + reserve_hold = captures - refunds - chargebacks lost - payouts.
    Computed straight from the accepted events, not from the postings.
-#}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
),

expected as (
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
        ) as expected_total
    from accepted_events
    group by 1, 2
),

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
