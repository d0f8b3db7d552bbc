import { OpenIdProvider } from "./oidc";

/** Google (its issuer, https://accounts.google.com): an OpenID provider whose id_tokens name their issuer with or without the scheme. */
export class GoogleProvider extends OpenIdProvider {
  protected override issuers(): string[] {
    return [this.settings.issuer, new URL(this.settings.issuer).host];
  }
}
