/** The login: the key is checked with GET /api/v1/session before anything else is shown. */
import { useState } from 'preact/hooks';
import { type ApiError, call, storeKey } from '../api';
import { ErrorBox } from '../components/ui';
import type { Session } from '../types';

export function Login({
  error,
  onAccepted,
}: {
  error: ApiError | undefined;
  onAccepted: (s: Session) => void;
}) {
  const [key, setKey] = useState('');
  const [failure, setFailure] = useState<ApiError | undefined>(error);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const answer = await call<Session>('/api/v1/session', { key: key.trim() });
      storeKey(key.trim());
      onAccepted(answer.body);
    } catch (err) {
      setFailure(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <form onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Lattice console</h1>
        <p>This server requires an API key: a caller token (auth.callerTokens) or a vss admin API key.</p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="current-password"
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          required
        />
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
        <ErrorBox error={failure} what="Not signed in" />
      </form>
    </main>
  );
}
