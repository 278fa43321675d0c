// The resources page's spend per binding of the last 24 h against its day budgets (GET /v1/spend): "12,400 of
// 100,000 tokens today" with a meter, the cost likewise, and what calls in flight hold (counted against the budgets).
import { Table } from '../components/Table.js';
import { plural } from '../lib/format.js';
import { href } from '../lib/route.js';
import { tokens, usd, type BindingSpend } from './spendTypes.js';

/** "12,400 of 100,000 tokens today (12%)" with a meter, or "12,400 tokens" when there is no day budget. */
function Against(props: { used: number; budget: number | null; format: (n: number) => string; unit: string }) {
  const { used, budget, format, unit } = props;
  if (budget === null) return <>{`${format(used)}${unit}`} · no day budget</>;
  const share = (used / budget) * 100;
  const percent = used > 0 && share < 1 ? '<1%' : `${Math.round(share)}%`;
  return (
    <span class="spend">
      {`${format(used)} of ${format(budget)}${unit} today (${percent})`}
      <meter
        min={0}
        max={budget}
        low={budget * 0.75}
        high={budget * 0.9}
        optimum={0}
        value={Math.min(used, budget)}
        aria-label={`${percent} of the day budget`}
      />
    </span>
  );
}

/** The spend-per-binding table. */
export function SpendTable({ bindings }: { bindings: BindingSpend[] }) {
  return (
    <Table
      rows={bindings}
      rowKey={(b) => b.binding}
      empty="No binding."
      columns={[
        {
          title: 'Binding',
          cell: (b) =>
            b.stored ? (
              <a href={href('bindings', b.binding)}>{b.binding}</a>
            ) : (
              <>
                <span class="mono">{b.binding}</span> <span class="muted">(no longer stored)</span>
              </>
            ),
        },
        { title: 'Calls', cell: (b) => b.calls.toLocaleString() },
        {
          title: 'Tokens (24 h)',
          cell: (b) => (
            <Against used={b.tokens} budget={b.budget.tokensPerDay} format={(n) => n.toLocaleString()} unit=" tokens" />
          ),
        },
        {
          title: 'Cost (24 h)',
          cell: (b) => <Against used={b.costUsd} budget={b.budget.costPerDayUsd} format={usd} unit="" />,
        },
        {
          title: 'In flight',
          cell: (b) =>
            b.reserved.calls === 0 ? (
              <span class="muted">none</span>
            ) : (
              `${plural(b.reserved.calls, 'call')} holding ${tokens(b.reserved.tokens)}, ${usd(b.reserved.costUsd)}`
            ),
        },
      ]}
    />
  );
}
