{#- The fold over all of canonical history: every accepted event with its postings. The
    reconciliation test (assert_merchant_balance_current_reconciles) applies the same fold to one
    slice's accepted events, so that its scan can skip the other slices' row groups. -#}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
),

posted as (
    {{ post_payment_events('accepted_events') }}
)

select * from posted
