// This machine's sandbox support as `GET /v1/doctor` reports it: each backend's strength and what it enforces and
// does not (the host computes both from the mechanism; the console only shows them).
import { useState } from 'preact/hooks';

/** The parts of `GET /v1/doctor` the console shows. */
export interface Doctor {
  backends: Record<
    string,
    { backend: string; strength: string; network?: string; enforced?: string[]; notEnforced?: string[]; error?: string }
  >;
  harnesses?: Record<string, { available?: boolean; version?: string; path?: string; error?: string }>;
  missingSecrets?: { resource?: string; env?: string; [key: string]: unknown }[];
}

/** One row per sandbox backend: its strength, then what it enforces and does not, on demand. */
export function SandboxSupport({ doctor }: { doctor: Doctor }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Backend</th>
            <th scope="col">Strength</th>
            <th scope="col">Enforced / not enforced</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(doctor.backends).map(([name, b]) => (
            <tr key={name}>
              <td data-label="Backend">
                <strong>{name}</strong>
              </td>
              <td data-label="Strength">
                <span class={`badge ${b.strength === 'strong' ? 'ok' : b.strength === 'unavailable' ? 'bad' : 'warn'}`}>
                  {b.strength}
                </span>
                {b.error ? <div class="not-enforced">{b.error}</div> : null}
              </td>
              <td data-label="Enforced">
                <Lists enforced={b.enforced ?? []} notEnforced={b.notEnforced ?? []} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Lists({ enforced, notEnforced }: { enforced: string[]; notEnforced: string[] }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <span>
        {enforced.length} enforced,{' '}
        <span class={notEnforced.length > 0 ? 'not-enforced' : undefined}>{notEnforced.length} not enforced</span>{' '}
      </span>
      <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Hide' : 'Show'}
      </button>
      {open ? (
        <>
          <ul>
            {enforced.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
          {notEnforced.length > 0 ? <h3 class="not-enforced">Not enforced</h3> : null}
          <ul class="not-enforced">
            {notEnforced.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
        </>
      ) : null}
    </>
  );
}
