/** The operator's settings as god/settings/ answers them: what the tests of the
 * settings forms start from (the SMTP host set by the environment, the rest not). */
export const item = (value, source = "default", setBy = null) => ({
  value,
  source,
  editable: source !== "config",
  set_by: setBy,
});

export const SETTINGS = {
  server: { public_hostname: item("localhost") },
  smtp: {
    host: item(
      "127.0.0.1",
      "config",
      "environment variable APPLIANCE_SMTP_HOST",
    ),
    port: item(25),
    starttls: item(false),
    sender: item("portal@localhost"),
    username: item(""),
    password: { set: true, source: "console", editable: true, set_by: null },
  },
  warnings: [],
};
