/** One vss operation, polled every second while it runs: its step, progress, attempts, error and a retry. */
import { useState } from 'preact/hooks';
import { type ApiError, get, seg, send } from '../api';
import { ErrorBox, Json, Loading, StateBadge, When } from '../components/ui';
import { useLoad } from '../hooks';
import { href } from '../router';
import type { VssOperation } from '../types';
import { ADMIN } from './vss';

const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'SUPERSEDED']);

export function OperationPage({ id }: { id: string }) {
  const [retryError, setRetryError] = useState<ApiError | undefined>(undefined);
  const [finished, setFinished] = useState(false);
  const op = useLoad(
    async (s) => {
      const answer = await get<VssOperation>(`${ADMIN}/operations/${seg(id)}`, s);
      setFinished(FINISHED.has(answer.status));
      return answer;
    },
    [id],
    finished ? undefined : 1000,
  );
  const retry = async () => {
    try {
      await send('POST', `${ADMIN}/operations/${seg(id)}/retry`);
      setRetryError(undefined);
      setFinished(false);
      op.reload();
    } catch (err) {
      setRetryError(err as ApiError);
    }
  };
  const data = op.data;
  return (
    <>
      <h1>
        Operation <code>{id}</code> {data ? <StateBadge state={data.status} /> : null}
      </h1>
      <ErrorBox error={op.error} what="Could not read the operation" />
      {data === undefined ? (
        op.error ? null : (
          <Loading what="the operation" />
        )
      ) : (
        <>
          <p>
            {data.kind} of{' '}
            <a href={href('vss', data.entity, data.model_name)}>
              {data.entity}/{data.model_name}
            </a>
            {data.variant ? ` variant ${data.variant}` : ''} · attempts {data.attempts} · started{' '}
            <When at={data.created_at} />
            {data.finished_at ? (
              <>
                {' '}
                · finished <When at={data.finished_at} />
              </>
            ) : null}
          </p>
          <p>
            <label for="progress">Step {data.step ?? '—'}</label>{' '}
            <progress id="progress" max={1} value={typeof data.progress === 'number' ? data.progress : 0} />{' '}
            {typeof data.progress === 'number' ? `${Math.round(data.progress * 100)} %` : ''}
          </p>
          {data.last_error ? (
            <div class="error" role="alert">
              <strong>Last error:</strong> {data.last_error}
            </div>
          ) : null}
          {data.status === 'FAILED' ? (
            <button type="button" class="primary" onClick={() => void retry()}>
              Retry
            </button>
          ) : null}
          <ErrorBox error={retryError} what="The retry was refused" />
          <details>
            <summary>Result and payload</summary>
            <Json value={{ result: data.result, payload: data.payload }} />
          </details>
        </>
      )}
    </>
  );
}
