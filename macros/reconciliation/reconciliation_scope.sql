{% macro reconciliation_scope() -%}
    {#-
        What this invocation's reconciliation (assert_merchant_balance_current_reconciles) compares,
        from the vars `reconcile_slices` (N) and `reconcile_full`:
        {'build_seq': n, 'slices': N, 'checked': [slice, ...], 'full': bool}.
        - build_seq: this reconciliation's number, one more than the last one recorded in the runs
          table (record_reconciliation; 1 on a new warehouse);
        - checked: the slices compared, a slice being the keys whose merchant_id hashes to it
          (reconciliation_slice_of): slice build_seq mod N, so that every key is compared at least
          once every N reconciliations, and the slices of the keys the last reconciliation found
          wrong (its stored failures), compared again on every build until they pass; every slice
          when `reconcile_full` is true (the nightly job, CI, `payledger reconcile --full`).
        One query reads the runs table and the stored failures (either may be absent), without
        what the stored maxima run_dbt or the project's dbt plugin read from the tables' logs
        answer (_stored_maxima: the runs table's last build_seq; a failures table none of whose
        rows names a merchant, so no reconciliation_slice, has no failing slice); none when they
        answer both. While dbt parses (execute false): full, build_seq 0, nothing read.
    -#}
    {%- set slices = reconcile_slices() -%}
    {%- set full = reconcile_full() -%}
    {%- if not execute -%}
        {{ return({'build_seq': 0, 'slices': slices, 'checked': range(slices) | list, 'full': true}) }}
    {%- endif -%}
    {%- set failures = load_relation(node_relation('assert_merchant_balance_current_reconciles')) -%}
    {%- set runs = load_relation(reconciliation_runs()) -%}
    {%- set stored = _stored_maxima() -%}
    {%- set branches = [] -%}
    {%- set last_seq = namespace(value=0) -%}
    {%- set runs_key = _state_key(runs.schema, runs.identifier, 'build_seq') if runs is not none else none -%}
    {%- if runs_key in stored -%}
        {%- set last_seq.value = stored[runs_key] or 0 -%}
    {%- elif runs is not none -%}
        {%- do branches.append("select 'build_seq' as kind, coalesce(max(build_seq), 0) as value from " ~ runs) -%}
    {%- endif -%}
    {%- set failures_key = _state_key(failures.schema, failures.identifier, 'reconciliation_slice') if failures is not none else none -%}
    {%- if failures is not none and not (failures_key in stored and stored[failures_key] is none) -%}
        {%- do branches.append(
            "select distinct 'failing' as kind, " ~ reconciliation_slice_of('merchant_id', slices)
            ~ " as value from " ~ failures ~ " where merchant_id is not null"
        ) -%}
    {%- endif -%}
    {%- set failing = [] -%}
    {%- if branches -%}
        {%- for row in run_query(branches | join(" union all ")) -%}
            {%- if row[0] == 'build_seq' -%}
                {%- set last_seq.value = row[1] | int -%}
            {%- else -%}
                {%- do failing.append(row[1] | int) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set build_seq = last_seq.value + 1 -%}
    {%- set checked = range(slices) | list if full else ([build_seq % slices] + failing) | unique | sort -%}
    {{ return({'build_seq': build_seq, 'slices': slices, 'checked': checked, 'full': full}) }}
{%- endmacro %}
