import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const MAX_LOGO_BYTES = 512 * 1024;
export const LOGO_TYPES = ["image/png", "image/jpeg", "image/svg+xml"];

/** POST organisation/{id}/logo/ (multipart field `logo`): the organisation with its new branding_logo. */
export function uploadLogo(id, file, { onProgress } = {}) {
  const form = new FormData();
  form.append("logo", file, file.name);
  return api.upload(`organisation/${id}/logo/`, form, { onProgress });
}

export function useUploadLogo() {
  const revalidate = useRevalidate();
  return async (id, file, options) => {
    const saved = await uploadLogo(id, file, options);
    await revalidate("organisation/", "branding/");
    return saved;
  };
}
