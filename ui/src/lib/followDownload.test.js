import { afterEach, describe, expect, it, vi } from "vitest";
import { followDownload } from "./followDownload.js";

describe("followDownload", () => {
  afterEach(() => vi.restoreAllMocks());

  it("clicks a hidden link to the API's URL and leaves nothing behind", () => {
    const clicked = [];
    vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(
      function () {
        clicked.push({
          href: this.href,
          download: this.download,
          attached: document.body.contains(this),
        });
      },
    );
    followDownload(
      "/api/portal/files/download/?path=/q3%20report.pdf&access=7.1.ab",
      "q3 report.pdf",
    );
    expect(clicked).toEqual([
      {
        href: `${window.location.origin}/api/portal/files/download/?path=/q3%20report.pdf&access=7.1.ab`,
        download: "q3 report.pdf",
        attached: true,
      },
    ]);
    expect(document.querySelectorAll("a").length).toBe(0);
  });
});
