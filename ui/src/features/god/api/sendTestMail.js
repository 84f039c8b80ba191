import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST god/mail/test/ {to?}: {sent, to, error, mail}; to the operator's own address by default. */
export const sendTestMail = (to) =>
  api.post("god/mail/test/", to ? { to } : {});

export function useSendTestMail() {
  const revalidate = useRevalidate();
  return async (to) => {
    const result = await sendTestMail(to);
    await revalidate("god/mail/");
    return result;
  };
}
