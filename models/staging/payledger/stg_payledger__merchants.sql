with source as (
    select * from {{ source('payledger', 'merchants') }}
),

renamed as (
    select
        merchant_id,
        segment,
        segment_effective_from as segment_effective_from_date,
        updated_at
    from source
)

select * from renamed
