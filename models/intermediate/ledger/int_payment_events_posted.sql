{#- The fold over all of canonical history: every accepted event with its postings. -#}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
),

posted as (
    {{ post_payment_events('accepted_events') }}
)

select * from posted
