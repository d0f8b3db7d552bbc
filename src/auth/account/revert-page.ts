/**
 * The API's own page behind the undo link of an e-mail change notice (when APP_URL is not set): one
 * button, no other request than the undo itself. Opening the page changes nothing, since mail scanners
 * open links; the click sends the link's token to POST /auth/revert-email-change.
 */
export const REVERT_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Undo the change of your email address</title>
<link rel="icon" href="data:,">
<style>
  body { font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #1b1f24; }
  button { font: inherit; padding: .6rem 1.2rem; border-radius: 6px; border: 1px solid #1a7f37; background: #1a7f37; color: #fff; cursor: pointer; }
  button:disabled { opacity: .6; cursor: default; }
  #result { margin-top: 1rem; font-weight: 600; }
</style>
</head>
<body>
<h1>Undo the change of your email address</h1>
<p>This puts your old address back on your account, signs out every session and clears the password.
It also removes every passkey, second factor and linked sign-in added around the change; a mail lists them.
Then set a new password with “forgot password”, through the address you get back.</p>
<button id="undo" type="button">Undo the change</button>
<p id="result" role="status"></p>
<script>
(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const button = document.getElementById("undo");
  const result = document.getElementById("result");
  button.addEventListener("click", async () => {
    button.disabled = true;
    const answer = await fetch("revert-email-change", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }) });
    result.textContent = await answer.text();
    document.body.dataset.status = String(answer.status);
  });
})();
</script>
</body>
</html>
`;
